// onednn_eltwise.h's loops built for baseline (why a file per ISA: onednn_eltwise_loops.h).
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// (baseline target: no pragma)

#include "onednn_eltwise.h"
#include "onednn_eltwise_loops.h"

namespace minpy_kernels {

void onednn_fwd_loop_baseline(int alg, float* d, const float* a, int64_t n) {
  if (alg == 0) onednn_fwd_loop<OneDnnAlg::kTanh, float>(d, a, n);
  else onednn_fwd_loop<OneDnnAlg::kLogistic, float>(d, a, n);
}

void onednn_bwd_loop_baseline(int alg, float* d, const float* x, const float* dy, int64_t n) {
  if (alg == 0) onednn_bwd_loop<OneDnnAlg::kTanh, float>(d, x, dy, n);
  else onednn_bwd_loop<OneDnnAlg::kLogistic, float>(d, x, dy, n);
}

}  // namespace minpy_kernels

