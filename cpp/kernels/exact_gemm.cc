// exact_gemm.h: instruction-set choice, threads, and FullyConnected's three products.
#include "exact_gemm.h"

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "parallel.h"

namespace minpy_kernels {
namespace gemm {

void run_tiles_avx512(const Args& g, int64_t begin, int64_t end);
int64_t tile_count_avx512(const Args& g);
void run_tiles_avx2(const Args& g, int64_t begin, int64_t end);
int64_t tile_count_avx2(const Args& g);
void transpose_columns_avx2(const float* X, int64_t M, int64_t K, float* XT, int64_t k0, int64_t k1);

namespace {

// 0: the CPU decides; 1: AVX2 tiles even where AVX-512 runs (minpy_gemm_force_isa, for tests).
std::atomic<int> forced_isa{0};

bool wide() {
  static const bool w = __builtin_cpu_supports("avx512f");
  return w && forced_isa.load(std::memory_order_relaxed) != 1;
}

// Multiply-adds a helper thread must get to pay for waking it (about 2 us of work).
constexpr int64_t kMinWork = 200000;

}  // namespace

bool supported() {
  static const bool s = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return s;
}

void run(const Args& g, int threads) {
  if (g.I <= 0 || g.J <= 0) return;
  const bool w = wide();
  const int64_t tiles = w ? tile_count_avx512(g) : tile_count_avx2(g);
  auto body = [&g, w](int64_t begin, int64_t end) {
    if (w) run_tiles_avx512(g, begin, end);
    else run_tiles_avx2(g, begin, end);
  };
  // Chunks of about a quarter of a thread's share: a helper that wakes late still gets work.
  const int64_t chunk = std::max<int64_t>(1, tiles / (4 * std::max(threads, 1)));
  parallel_chunks(tiles, chunk, threads, std::move(body), idle_spin_ns());  // a graph's next GEMM follows soon
}

namespace {

int threads_for(int64_t i, int64_t j, int64_t r) { return threads_for_work(i * j * std::max<int64_t>(r, 1), kMinWork); }

}  // namespace

void fc_forward(const float* X, const float* W, const float* b, float* Y, int64_t M, int64_t K, int64_t N,
                int64_t kc, float* scratch) {
  // Y^T (N, M) = W (N, K) . X^T (K, M): the columns of a tile are rows of X, read contiguously
  // from X^T. Y is written through its strides.
  constexpr int64_t kColumns = 64;  // columns of X a chunk of the transposition takes
  parallel_chunks(K, kColumns, threads_for_work(M * K, kMinWork / 4),
                  [&](int64_t k0, int64_t k1) { transpose_columns_avx2(X, M, K, scratch, k0, k1); }, idle_spin_ns());
  Args g;
  g.I = N, g.J = M, g.R = K;
  g.A = W, g.a_is = K, g.a_rs = 1;
  g.B = scratch, g.ldb = M;
  g.C = Y, g.c_is = 1, g.c_js = N;
  g.bias = b;
  g.kc = kc;
  run(g, threads_for(N, M, K));
}

void fc_backward(const float* dY, const float* X, const float* W, float* dX, float* dW, float* dB, int64_t M,
                 int64_t K, int64_t N, int64_t kc_data, int64_t kc_weight) {
  if (dX) {
    Args g;
    g.I = M, g.J = K, g.R = N;
    g.A = dY, g.a_is = N, g.a_rs = 1;
    g.B = W, g.ldb = K;
    g.C = dX, g.c_is = K, g.c_js = 1;
    g.kc = kc_data;
    run(g, threads_for(M, K, N));
  }
  if (dW) {
    Args g;
    g.I = N, g.J = K, g.R = M;
    g.A = dY, g.a_is = 1, g.a_rs = N;
    g.B = X, g.ldb = K;
    g.C = dW, g.c_is = K, g.c_js = 1;
    g.kc = kc_weight;
    run(g, threads_for(N, K, M));
  }
  if (dB) {  // rows added in order from zero, as oneDNN's bias gradient sums them
    std::fill(dB, dB + N, 0.0f);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) dB[n] = dB[n] + dY[m * N + n];
  }
}

// Plain loops the compiler vectorises for each instruction set (max and compare-and-blend keep
// these semantics without -ffast-math, which this library is never built with).
__attribute__((target_clones("avx512f", "avx2", "default")))
void relu_forward(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void relu_backward(const float* g, const float* out, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = out[i] > 0.0f ? g[i] : g[i] * 0.0f;
}

}  // namespace gemm
}  // namespace minpy_kernels

// ---- direct calls, for the runtime's exactness check and the tests (ctypes) ----

// Tests: 1 runs the AVX2 tiles on an AVX-512 CPU too, 0 lets the CPU decide; returns the old setting.
extern "C" __attribute__((visibility("default"))) int minpy_gemm_force_isa(int isa) {
  return minpy_kernels::gemm::forced_isa.exchange(isa);
}

// Multiply-adds below which a product runs on one thread (threads_for_work's floor).
extern "C" __attribute__((visibility("default"))) int64_t minpy_gemm_serial_multiply_adds() {
  return 2 * minpy_kernels::gemm::kMinWork;
}

extern "C" __attribute__((visibility("default"))) int minpy_gemm_supported() {
  return minpy_kernels::gemm::supported() ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) void minpy_fc_forward(const float* X, const float* W,
                                                                       const float* b, float* Y, int64_t M,
                                                                       int64_t K, int64_t N, int64_t kc) {
  std::vector<float> scratch(static_cast<size_t>(K * M));
  minpy_kernels::gemm::fc_forward(X, W, b, Y, M, K, N, kc, scratch.data());
}

extern "C" __attribute__((visibility("default"))) void minpy_fc_backward(const float* dY, const float* X,
                                                                        const float* W, float* dX, float* dW,
                                                                        float* dB, int64_t M, int64_t K,
                                                                        int64_t N, int64_t kc_data,
                                                                        int64_t kc_weight) {
  minpy_kernels::gemm::fc_backward(dY, X, W, dX, dW, dB, M, K, N, kc_data, kc_weight);
}

extern "C" __attribute__((visibility("default"))) void minpy_relu_forward(float* y, int64_t n) {
  minpy_kernels::gemm::relu_forward(y, n);
}

extern "C" __attribute__((visibility("default"))) void minpy_relu_backward(const float* g, const float* out,
                                                                          float* d, int64_t n) {
  minpy_kernels::gemm::relu_backward(g, out, d, n);
}
