// Developer check (not part of the library): vmath.h's eight-lane tanh loop, as an AVX2 build,
// called on tiles of 512 inputs as the fused kernel calls it, against libm's tanhf on all 2^32
// float bit patterns, then on 128M inputs in tiles that mix magnitudes below and above 1 (the
// loop takes shorter forms for tiles whose inputs are all below 1 or all at least 1 in
// magnitude: tanhf_fdlibm_below_one, tanhf_fdlibm_from_one). NaNs compare as NaN. With an
// argument it times the loop instead (ns an element over 1M floats, best of 15, one core).
// From the repo root, about a minute (tanh_lanes_check.cc checks the AVX-512 loop, on an
// AVX-512 CPU):
//   g++ -O3 -ffp-contract=off -fno-math-errno -fno-trapping-math -std=c++17 -mavx2 -Icpp/kernels
//       cpp/kernels/dev/tanh_check.cc cpp/kernels/libm_check.cc -o /tmp/tanh_check   (one line)
//   /tmp/tanh_check [time]
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
    const float ranges[][2] = {{-1.0f, 1.0f}, {-3.0f, 3.0f}, {-7.0f, 7.0f}, {1.0f, 7.0f}, {-1.2f, 1.2f}};
    for (const auto& range : ranges) {
      std::uniform_real_distribution<float> u(range[0], range[1]);
      for (auto& v : in) v = u(g);
      double best = 1e9;
      for (int r = 0; r < 15; ++r) {
        auto t = std::chrono::steady_clock::now();
        for (int64_t j = 0; j < kBlock; j += 512)  // as the kernel calls it: a tile at a time
          vm::tanhf_fdlibm_loop<vm::F8>(out.data() + j, in.data() + j, 512);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
      }
      std::printf("uniform(%g, %g): %.3f ns an element\n", range[0], range[1], best / kBlock * 1e9);
    }
    return 0;
  }
  uint64_t bad = 0;
  for (uint64_t base = 0; base < (uint64_t(1) << 32); base += kBlock) {
    for (int64_t i = 0; i < kBlock; ++i) { const uint32_t b = uint32_t(base + i); std::memcpy(&in[i], &b, 4); }
    for (int64_t j = 0; j < kBlock; j += 512) vm::tanhf_fdlibm_loop<vm::F8>(out.data() + j, in.data() + j, 512);
    for (int64_t i = 0; i < kBlock; ++i) {
      const float ref = ::tanhf(in[i]);
      if (!same(out[i], ref) && bad++ < 5) std::printf("differs at %a: %a vs libm %a\n", in[i], out[i], ref);
    }
  }
  // Tiles of 512 mixing magnitudes: random lanes from all magnitudes (mostly below 1), and
  // tiles below 1 but for one lane at a random place (past the first 16 inputs most often).
  std::mt19937 g(7);
  for (int rep = 0; rep < 128; ++rep) {
    for (auto& v : in) {
      uint32_t b = g();
      if (rep % 2 ? true : (g() % 4 != 0)) b = (b & 0x80000000u) | (b % 0x3f800000u);
      std::memcpy(&v, &b, 4);
    }
    if (rep % 2)
      for (int64_t j = 0; j < kBlock; j += 512) {
        const uint32_t b = 0x3f800000u + g() % 0x40800000u;  // 1 up to NaNs
        std::memcpy(&in[j + g() % 512], &b, 4);
      }
    for (int64_t j = 0; j < kBlock; j += 512) vm::tanhf_fdlibm_loop<vm::F8>(out.data() + j, in.data() + j, 512);
    for (int64_t i = 0; i < kBlock; ++i) if (!same(out[i], ::tanhf(in[i])) && bad++ < 5) std::printf("mixed differs at %a\n", in[i]);
  }
  std::printf("all 2^32 inputs + 128M in mixed tiles: %llu differ from libm tanhf\n", (unsigned long long)bad);
  return bad ? 1 : 0;
}
