// exact_gemm_tiles.h for AVX-512: 6 rows by 4 vectors of 16 columns (24 accumulators).
// Called only where the CPU has AVX-512F (exact_gemm.cc).
#pragma GCC target("avx512f")
#include "exact_gemm_tiles.h"

namespace minpy_kernels {
namespace gemm {
namespace {

struct V512 {
  using Reg = __m512;
  static constexpr int kLanes = 16, kMR = 6, kNV = 4;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg x) { _mm512_storeu_ps(p, x); }
  static __mmask16 tail_mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static Reg load_tail(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_tail(float* p, Reg x, __mmask16 m) { _mm512_mask_storeu_ps(p, m, x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
};

}  // namespace

void run_tiles_avx512(const Args& g, int64_t begin, int64_t end) { run_tiles<V512>(g, begin, end); }
int64_t tile_count_avx512(const Args& g) { return tile_count<V512>(g); }

}  // namespace gemm
}  // namespace minpy_kernels
