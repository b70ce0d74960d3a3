#include "exact_activation.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "executor.h"
#include "kernel_check.h"
#include "mxapi.h"
#include "runtime.h"

namespace minpy {

namespace {

// MXNet 1.9.1's wheel runs Activation through oneDNN for float32 CPU data of 1 to 5 axes, forward
// and backward (DNNL_VERBOSE: 6 axes, 0 axes, float16 and float64 run MXNet's own kernel; the
// SupportMKLDNNAct of the sources stored for 1.x says 1 to 4: the wheel's is wider).
bool onednn_runs(const AVal& in) { return in.dtype == 0 && in.dev_type == 1 && in.ndim >= 1 && in.ndim <= 5; }

// Elements of a check's draw: odd, so that every lane form's tail runs too.
constexpr int64_t kDrawSize = (int64_t(1) << 18) + 13;

uint64_t next_bits(uint64_t* s) {
  *s = mix64(*s);
  return *s;
}

// The inputs and head gradients a check compares on: every pair of the special values
// (signed zeros, infinities, NaNs with payloads, subnormals, the saturation region's edges),
// then random bit patterns (every exponent, NaNs and subnormals included) and random values
// in [-20, 20], where the functions bend, each with a random wide head gradient.
void make_draw(std::vector<float>* x, std::vector<float>* g) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> pool{0.0f, -0.0f, inf, -inf, 1e-45f, -1e-45f, 1e-39f, -1e-39f, 1.0f, -1.0f,
                          0.5f, -0.5f, 9.0f, -9.0f, 10.0f, -10.0f, 88.5f, -88.5f, 3.4e38f, -3.4e38f};
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0xff812345u, 0x7f800001u})  // quiet and signalling NaNs
    pool.push_back([&] { float f; std::memcpy(&f, &bits, sizeof f); return f; }());
  uint64_t s = 0x6a09e667f3bcc908ULL;
  const size_t n = static_cast<size_t>(kDrawSize), P = pool.size();
  x->resize(n);
  g->resize(n);
  for (size_t k = 0; k < n; ++k) {
    if (k < P * P) {
      (*x)[k] = pool[k % P];
      (*g)[k] = pool[(k / P) % P];
      continue;
    }
    const uint64_t r = next_bits(&s);
    if (k % 2 == 0) {
      const uint32_t bits = static_cast<uint32_t>(r);
      std::memcpy(&(*x)[k], &bits, sizeof bits);
    } else {
      (*x)[k] = (static_cast<float>(r >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f) * 20.0f;
    }
    (*g)[k] = std::ldexp(static_cast<float>(static_cast<int64_t>(r >> 8 & 0xffffff) - (1 << 23)),
                         static_cast<int>((r >> 32) % 40) - 43);
  }
}

// MXNet's Activation(act) against a fused unit of the one instruction `instr`.
bool check_activation(const std::string& act, const char* instr, bool training) {
  AtomicSymbolCreator activation = nullptr, fused = nullptr;
  if (NNGetOpHandle("Activation", &activation) != 0 || !activation) return false;
  if (NNGetOpHandle("_minpy_fused_elemwise", &fused) != 0 || !fused) return false;
  std::vector<float> x, g;
  make_draw(&x, &g);
  AVal a;
  a.ndim = 1;
  a.dims[0] = kDrawSize;
  a.dtype = 0;
  a.dev_type = 1;
  AutogradState state(false, training);
  std::vector<float> want_y, want_dx, y, dx;
  const std::string n = std::to_string(kDrawSize), shape = "(" + n + ",)", access = "0," + n + ",1",
                    program = std::string("ld 0;") + instr + " 0";
  if (!forward_backward(activation, {"act_type"}, {act.c_str()}, a, x, g, training, &want_y, &want_dx)) return false;
  if (!forward_backward(fused, {"num_inputs", "num_outputs", "out_shape", "access", "program", "outputs"},
                        {"1", "1", shape.c_str(), access.c_str(), program.c_str(), "1"}, a, x, g, training, &y, &dx))
    return false;
  return same_bits(y, want_y) && same_bits(dx, want_dx);
}

}  // namespace

const char* activation_instr(const std::string& act, const AVal& in, bool training) {
  for (const char* name : {"relu", "softsign"})
    if (act == name) return name;
  const char* instr = act == "sigmoid" ? "sigmoid_dnnl" : act == "tanh" ? "tanh_dnnl" : nullptr;
  if (!instr || !onednn_runs(in)) return nullptr;
  const bool exact = checked_once(act + (training ? "t" : ""), [&] { return check_activation(act, instr, training); });
  return exact ? instr : nullptr;
}

}  // namespace minpy
