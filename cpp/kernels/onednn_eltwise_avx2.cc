// onednn_eltwise.h's loops built for avx2 (why a file per ISA: onednn_eltwise_loops.h).
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "onednn_eltwise.h"
#include "onednn_eltwise_loops.h"

namespace minpy_kernels {

void onednn_fwd_loop_avx2(int alg, float* d, const float* a, int64_t n) {
  if (alg == 0) onednn_fwd_loop<OneDnnAlg::kTanh, vm::F8>(d, a, n);
  else onednn_fwd_loop<OneDnnAlg::kLogistic, vm::F8>(d, a, n);
}

void onednn_bwd_loop_avx2(int alg, float* d, const float* x, const float* dy, int64_t n) {
  if (alg == 0) onednn_bwd_loop<OneDnnAlg::kTanh, vm::F8>(d, x, dy, n);
  else onednn_bwd_loop<OneDnnAlg::kLogistic, vm::F8>(d, x, dy, n);
}

}  // namespace minpy_kernels
#pragma GCC pop_options
