// Developer check (not part of the library): the library's AVX-512 tanh loop
// (vmath_avx512.cc, built as the library builds it) and the eight-lane loop of vmath.h against
// libm's tanhf on all 2^32 float bit patterns (NaNs compared as NaN). Needs an AVX-512 CPU.
// Run from the repo root (about a minute):
//   g++ -O3 -ffp-contract=off -fno-math-errno -fno-trapping-math -std=c++17 -mavx2 -Icpp/kernels \
//       cpp/kernels/dev/tanh_lanes_check.cc cpp/kernels/vmath_avx512.cc -o /tmp/tanh_lanes_check && /tmp/tanh_lanes_check
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "vmath.h"
#include "vmath_avx512.h"

using namespace minpy_kernels;

static bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }

int main() {
  const int64_t kBlock = 1 << 20;
  std::vector<float> in(kBlock), wide(kBlock), narrow(kBlock);
  uint64_t bad_wide = 0, bad_narrow = 0;
  for (uint64_t base = 0; base < (uint64_t(1) << 32); base += kBlock) {
    for (int64_t i = 0; i < kBlock; ++i) {
      const uint32_t b = static_cast<uint32_t>(base + i);
      std::memcpy(&in[i], &b, sizeof b);
    }
    vm::tanhf_loop_avx512(wide.data(), in.data(), kBlock);
    vm::tanhf_fdlibm_loop<vm::F8>(narrow.data(), in.data(), kBlock);
    for (int64_t i = 0; i < kBlock; ++i) {
      const float ref = ::tanhf(in[i]);
      if (!same(wide[i], ref) && bad_wide++ < 5) std::printf("F16 differs at %a: %a vs libm %a\n", in[i], wide[i], ref);
      if (!same(narrow[i], ref) && bad_narrow++ < 5) std::printf("F8 differs at %a: %a vs libm %a\n", in[i], narrow[i], ref);
    }
  }
  std::printf("all 2^32 inputs: F16 %llu differ, F8 %llu differ from libm tanhf\n",
              static_cast<unsigned long long>(bad_wide), static_cast<unsigned long long>(bad_narrow));
  return (bad_wide || bad_narrow) ? 1 : 0;
}
