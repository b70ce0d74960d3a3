// Developer check (not part of the library): vmath.h's eight-lane tanh loop, as an AVX2 build,
// against libm's tanhf on all 2^32 float bit patterns, then on 64M inputs whose vectors mix
// lanes below and above 1 in magnitude (the loop takes a shorter form for vectors whose lanes
// are all below 1: tanhf_fdlibm_below_one). NaNs compare as NaN. With an argument it times the
// loop instead (ns an element over 1M floats, best of 15, one core). From the repo root (about
// a minute; tanh_lanes_check.cc is the same check for the AVX-512 loop, on an AVX-512 CPU):
//   g++ -O3 -ffp-contract=off -fno-math-errno -fno-trapping-math -std=c++17 -mavx2 -Icpp/kernels \
//       cpp/kernels/dev/tanh_check.cc cpp/kernels/libm_check.cc -o /tmp/tanh_check && /tmp/tanh_check [time]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
#include <chrono>
#include <random>
#include "vmath.h"
using namespace minpy_kernels;
static bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }
int main(int argc, char** argv) {
  const int64_t kBlock = 1 << 20;
  std::vector<float> in(kBlock), out(kBlock);
  if (argc > 1) {  // timing
    std::mt19937 g(1);
    for (float lim : {1.0f, 0.99f, 3.0f, 7.0f}) {
      std::uniform_real_distribution<float> u(-lim, lim);
      for (auto& v : in) v = u(g);
      double best = 1e9;
      for (int r = 0; r < 15; ++r) {
        auto t = std::chrono::steady_clock::now();
        vm::tanhf_fdlibm_loop<vm::F8>(out.data(), in.data(), kBlock);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
      }
      std::printf("uniform(-%g, %g): %.3f ns/elem\n", lim, lim, best / kBlock * 1e9);
    }
    return 0;
  }
  uint64_t bad = 0;
  for (uint64_t base = 0; base < (uint64_t(1) << 32); base += kBlock) {
    for (int64_t i = 0; i < kBlock; ++i) { const uint32_t b = uint32_t(base + i); std::memcpy(&in[i], &b, 4); }
    vm::tanhf_fdlibm_loop<vm::F8>(out.data(), in.data(), kBlock);
    for (int64_t i = 0; i < kBlock; ++i) {
      const float ref = ::tanhf(in[i]);
      if (!same(out[i], ref) && bad++ < 5) std::printf("differs at %a: %a vs libm %a\n", in[i], out[i], ref);
    }
  }
  // mixed vectors: random lanes from all magnitudes
  std::mt19937 g(7);
  for (int rep = 0; rep < 64; ++rep) {
    for (auto& v : in) { uint32_t b = g(); if (g() % 4) b = (b & 0x80000000u) | (b % 0x3f800000u); std::memcpy(&v, &b, 4); }
    vm::tanhf_fdlibm_loop<vm::F8>(out.data(), in.data(), kBlock);
    for (int64_t i = 0; i < kBlock; ++i) if (!same(out[i], ::tanhf(in[i])) && bad++ < 5) std::printf("mixed differs at %a\n", in[i]);
  }
  std::printf("all 2^32 inputs + 64M mixed-lane inputs: %llu differ from libm tanhf\n", (unsigned long long)bad);
  return bad ? 1 : 0;
}
