// GEMM microbenchmark for exact_gemm.h (no MXNet, no Python): W3's first layer, 64 x 784 by
// 256 x 784, through the three products FullyConnected needs, on the threads the kernels pick
// and on one (MINPY_KERNELS_THRESHOLD_SCALE=1e12 keeps every call on one thread), and the
// helper pool's cost per call: a 100-chunk job of 1 us chunks on two threads.
//   g++ -std=c++17 -O3 -ffp-contract=off -pthread -Icpp/kernels cpp/bench/bench_gemm.cc
//       cpp/kernels/exact_gemm.cc cpp/kernels/exact_gemm_avx512.cc cpp/kernels/exact_gemm_avx2.cc
//       cpp/kernels/parallel.cc -o /tmp/bench_gemm   (one line)
//   /tmp/bench_gemm; MINPY_KERNELS_THRESHOLD_SCALE=1e12 /tmp/bench_gemm
// Seen 2026-11-29 (AMD EPYC, AVX-512, 2 cores, idle): forward 64-71 us (incl. transposing X),
// dX 58-59, dW 62-68 on two threads; 109, 109, 119 on one (MXNet's FullyConnected forward, one
// core, from Python: 128 us a call). The pool lines: 54-58 us either way when calls follow each
// other at once (helpers have not fallen asleep yet); linger pays where a graph's other ops run
// between two GEMMs (benchmarks/config_ab.py fc_kernels).
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "exact_gemm.h"
#include "parallel.h"

using namespace minpy_kernels;

template <class F>
void time_it(const char* name, F f) {
  for (int i = 0; i < 50; ++i) f();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) f();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 1000;
  std::printf("%-44s %8.1f us\n", name, us);
}

int main() {
  const int64_t M = 64, K = 784, N = 256;
  std::vector<float> X(M * K), W(N * K), Y(M * N), S(K * M), dY(M * N), dX(M * K), dW(N * K);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (auto* v : {&X, &W, &dY})
    for (float& x : *v) x = normal(rng);
  std::printf("threads the kernels may use: %d\n", max_threads());
  time_it("forward (X transposed, blocks of 384)", [&] { gemm::fc_forward(X.data(), W.data(), nullptr, Y.data(), M, K, N, 384, S.data()); });
  time_it("data gradient dX = dY . W", [&] { gemm::fc_backward(dY.data(), X.data(), W.data(), dX.data(), nullptr, nullptr, M, K, N, 0, 0); });
  time_it("weight gradient dW = dY^T . X", [&] { gemm::fc_backward(dY.data(), X.data(), W.data(), nullptr, dW.data(), nullptr, M, K, N, 0, 0); });
  // The pool: 100 chunks of 1 us each on two threads (100 us of work), with and without linger.
  for (int64_t linger : {int64_t(0), idle_spin_ns()}) {
    auto job = [&] {
      parallel_chunks(100, 1, 2, [](int64_t, int64_t) {
        const auto s = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - s < std::chrono::microseconds(1)) {}
      }, linger);
    };
    time_it(linger ? "pool: 100 x 1 us on 2 threads, helpers awake" : "pool: 100 x 1 us on 2 threads, helpers asleep", job);
  }
}
