// Loops of onednn_eltwise.h's functions, built per instruction set (onednn_eltwise_avx2.cc,
// onednn_eltwise_avx512.cc): the functions need FMA in the target to be fast (a target_clones
// "avx2" clone has none, so each fused multiply-add would be a libm fmaf call), and a vector
// type gets its machine mode from the ISA enabled where it is declared (vmath_avx512.cc).
// alg: 0 tanh, 1 logistic (Activation's sigmoid). d may equal a or x.
#pragma once
#include <cstdint>

namespace minpy_kernels {

void onednn_fwd_loop_avx2(int alg, float* d, const float* a, int64_t n);
void onednn_bwd_loop_avx2(int alg, float* d, const float* x, const float* dy, int64_t n);
void onednn_fwd_loop_avx512(int alg, float* d, const float* a, int64_t n);
void onednn_bwd_loop_avx512(int alg, float* d, const float* x, const float* dy, int64_t n);
// Baseline x86-64 (libm's fmaf: exact, slow), for a CPU with neither.
void onednn_fwd_loop_baseline(int alg, float* d, const float* a, int64_t n);
void onednn_bwd_loop_baseline(int alg, float* d, const float* x, const float* dy, int64_t n);

}  // namespace minpy_kernels
