// Developer check (not part of the library): onednn_softmax_avx512.cc's sixteen-lane rows
// against onednn_softmax.h's scalar model of the same kernel (itself checked against MXNet,
// onednn_softmax_check.cc), bit for bit, forward and backward, on rows of every length from 1
// to 70 and some long ones, drawn from ranges that reach every path: uniform in small and wide
// ranges, wide magnitudes with subnormals, +-0, +-inf, quiet and signalling NaNs of both
// signs with payloads, all-equal rows, near +-FLT_MAX. From the repo root:
//   g++ -O3 -ffp-contract=off -fno-math-errno -fno-trapping-math -std=c++17 -Icpp/kernels
//       cpp/kernels/dev/onednn_softmax_lanes_check.cc cpp/kernels/onednn_softmax_avx512.cc
//       -o /tmp/onednn_softmax_lanes_check && /tmp/onednn_softmax_lanes_check   (one line)
// Prints the number of elements compared and those whose bits differ (exit status 1 if any), and
// the time of both on W3's loss rows.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <random>
#include <vector>

#include "onednn_softmax.h"

using namespace minpy_kernels;

namespace {

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

float draw(std::mt19937& g, int kind) {
  std::uniform_real_distribution<float> small(-3.f, 3.f), wide(-200.f, 200.f);
  switch (kind) {
    case 0: return small(g);
    case 1: return wide(g);
    case 2: {  // any finite magnitude, subnormals included
      uint32_t u = g() & 0x7f7fffffu;
      return from_bits(u | (g() & 1u ? 0x80000000u : 0u));
    }
    default: {  // specials sprinkled into plain values
      const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
                                   0x7fa00001u, 0xffa12345u, 0x7f7fffffu, 0xff7fffffu, 0x00000001u, 0x80400000u};
      if (g() % 4 == 0) return from_bits(specials[g() % 12]);
      return small(g);
    }
  }
}

}  // namespace

int main() {
  std::mt19937 g(12345);
  long compared = 0, fwd_diff = 0, bwd_diff = 0;
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 70; ++n) lengths.push_back(n);
  for (int64_t n : {100, 127, 129, 255, 257, 1000, 4099}) lengths.push_back(n);
  for (int64_t cols : lengths) {
    const int trials = cols <= 70 ? 400 : 40;
    for (int kind = 0; kind < 5; ++kind) {
      const int64_t rows = 8;
      std::vector<float> x(rows * cols), dy(rows * cols);
      for (int t = 0; t < trials; ++t) {
        for (auto& v : x) v = kind == 4 ? 1.25f : draw(g, kind);
        for (auto& v : dy) v = draw(g, kind == 4 ? 3 : kind);
        std::vector<float> y0(x.size()), y1(x.size()), dx0(x.size()), dx1(x.size());
        log_softmax_rows_forward(x.data(), y0.data(), rows, cols, 16);
        log_softmax_rows_forward_avx512(x.data(), y1.data(), rows, cols);
        log_softmax_rows_backward(dy.data(), y0.data(), dx0.data(), rows, cols, 16);
        log_softmax_rows_backward_avx512(dy.data(), y0.data(), dx1.data(), rows, cols);
        for (size_t i = 0; i < x.size(); ++i) {
          fwd_diff += bits(y0[i]) != bits(y1[i]);
          bwd_diff += bits(dx0[i]) != bits(dx1[i]);
        }
        compared += static_cast<long>(x.size());
      }
    }
  }
  std::printf("%ld elements per direction; bits differ: forward %ld, backward %ld\n", compared, fwd_diff, bwd_diff);
  // W3's loss rows (64 of 10): microseconds a call, scalar model against sixteen lanes (medians of 9 x 2000)
  {
    const int64_t rows = 64, cols = 10;
    std::vector<float> x(rows * cols), y(x.size()), dy(x.size()), dx(x.size());
    for (auto& v : x) v = draw(g, 0);
    for (auto& v : dy) v = draw(g, 0) * 0.01f;
    auto time_us = [&](auto&& fn) {
      std::vector<double> t;
      for (int rep = 0; rep < 9; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 2000; ++i) fn();
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 2000);
      }
      std::sort(t.begin(), t.end());
      return t[4];
    };
    const double f0 = time_us([&] { log_softmax_rows_forward(x.data(), y.data(), rows, cols, 16); });
    const double f1 = time_us([&] { log_softmax_rows_forward_avx512(x.data(), y.data(), rows, cols); });
    const double b0 = time_us([&] { log_softmax_rows_backward(dy.data(), y.data(), dx.data(), rows, cols, 16); });
    const double b1 = time_us([&] { log_softmax_rows_backward_avx512(dy.data(), y.data(), dx.data(), rows, cols); });
    std::printf("64 rows of 10, us a call: forward %.2f -> %.2f, backward %.2f -> %.2f\n", f0, f1, b0, b1);
  }
  return fwd_diff || bwd_diff ? 1 : 0;
}
