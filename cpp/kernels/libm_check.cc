// Checks vmath.h's reproductions of libm against the libm this process runs (see libm_check.h).
#include "libm_check.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vmath.h"

namespace minpy_kernels {
namespace vm {

const Exp2Table& exp2_table() {
  static const Exp2Table table = [] {
    Exp2Table t;
    for (int i = 0; i < 32; ++i) {
      // 2^(i/32) in long double, rounded to double: the correctly rounded value (checked below).
      const double v = static_cast<double>(exp2l(static_cast<long double>(i) / 32));
      t.bits[i] = bits_of(v) - (static_cast<uint64_t>(i) << 47);
    }
    return t;
  }();
  return table;
}

}  // namespace vm

namespace {

float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }

// Inputs spread over every exponent and sign (2^16 bit patterns), every float in [-24, 24]
// on a fine grid, and the two inputs where glibc's fused and unfused expf differ.
std::vector<float> probe_inputs() {
  std::vector<float> xs;
  for (uint32_t i = 0; i < 65536; ++i) xs.push_back(float_of(i * 65537u));
  for (float x = -24.0f; x <= 24.0f; x += 0.000977f) xs.push_back(x);
  xs.push_back(float_of(0x4202422fu));
  xs.push_back(float_of(0xc27c65d9u));
  return xs;
}

template <class F, class G>
bool agree(const std::vector<float>& xs, F ours, G libm) {
  for (float x : xs)
    if (!same_bits(ours(x), libm(x))) return false;
  return true;
}

}  // namespace

const LibmForms& libm_forms() {
  static const LibmForms forms = [] {
    const std::vector<float> xs = probe_inputs();
    const uint64_t* table = vm::exp2_table().bits;
    LibmForms f;
    f.tanh_reproduced = agree(xs, [](float x) { return vm::tanhf_fdlibm<float>(x); }, [](float x) { return ::tanhf(x); });
    auto libm_exp = [](float x) { return ::expf(x); };
    if (agree(xs, [&](float x) { return vm::expf_glibc<true>(x, table); }, libm_exp)) f.exp = ExpForm::kFused;
    else if (agree(xs, [&](float x) { return vm::expf_glibc<false>(x, table); }, libm_exp)) f.exp = ExpForm::kUnfused;
    else f.exp = ExpForm::kLibm;
    return f;
  }();
  return forms;
}

}  // namespace minpy_kernels
