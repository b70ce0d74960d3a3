// GEMMs that sum as MXNet's FullyConnected does on the CPU, on both cores.
//
// MXNet 1.9.1's CPU wheel runs FullyConnected and its backward through oneDNN, one engine
// worker thread, one core: W3's three layers spend about 0.4 ms a step there while the
// other core waits. These kernels compute the same products on every core the process may
// use, in the summation order oneDNN's GEMM uses, so each output element gets the same bits:
//
//   the reduction (r = 0..R-1) is cut into blocks of `kc`; within a block the products are
//   accumulated by fused multiply-adds from zero, r ascending; the blocks' sums are added in
//   block order; a bias is added last.
//
// Found by experiment (forward 64x784 by 256x784: blocks of 384; backward data and weight: one
// chain) and never assumed: the runtime runs MXNet's operator against these kernels on random
// data for every shape before a graph uses them, trying the block lengths oneDNN may pick
// (cpp/src/exact_fc.cc). A shape that differs in any bit keeps MXNet's operator.
//
// Needs AVX2 and FMA (gemm_supported()); AVX-512 where the CPU has it. Which thread computes
// an output element never changes its bits: each element's sum runs in one thread.
#pragma once

#include <cstdint>

namespace minpy_kernels {
namespace gemm {

bool supported();  // the CPU has AVX2 and FMA

// C[i, j] = sum_r A(i, r) * B[r * ldb + j] (+ bias[i]), A(i, r) = A[i * a_is + r * a_rs],
// C[i, j] at C[i * c_is + j * c_js].
struct Args {
  int64_t I = 0, J = 0, R = 0;
  const float* A = nullptr;
  int64_t a_is = 0, a_rs = 0;
  const float* B = nullptr;
  int64_t ldb = 0;
  float* C = nullptr;
  int64_t c_is = 0, c_js = 0;
  const float* bias = nullptr;  // per i, added after the sum; may be null
  int64_t kc = 0;               // reduction block; <= 0: one block
};

// Runs on up to `threads` threads (parallel.h's helpers).
void run(const Args& g, int threads);

// Y (M, N) = X (M, K) . W (N, K)^T (+ b): FullyConnected's forward. `scratch` holds K * M floats.
void fc_forward(const float* X, const float* W, const float* b, float* Y, int64_t M, int64_t K, int64_t N,
                int64_t kc, float* scratch);
// dX (M, K) = dY (M, N) . W (N, K); dW (N, K) = dY^T . X; dB[n] = sum_m dY[m, n] (rows in
// order from zero). A null output is not computed.
void fc_backward(const float* dY, const float* X, const float* W, float* dX, float* dW, float* dB, int64_t M,
                 int64_t K, int64_t N, int64_t kc_data, int64_t kc_weight);

// MXNet's Activation(act_type='relu') on the CPU (oneDNN), in place: y > 0 ? y : +0 (negative
// values, -0 and NaN all become +0). Measured on this wheel against MXNet's operator, and
// checked at run time per shape before a graph uses it (cpp/src/exact_fc.cc).
void relu_forward(float* y, int64_t n);
// Its backward from the forward's output: out > 0 ? g : g * 0 (a zero of g's sign; NaN for an
// infinite or NaN g).
void relu_backward(const float* g, const float* out, float* d, int64_t n);

}  // namespace gemm
}  // namespace minpy_kernels
