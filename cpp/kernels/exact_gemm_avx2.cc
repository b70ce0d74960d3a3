// exact_gemm_tiles.h for AVX2 with FMA: 4 rows by 3 vectors of 8 columns (12 accumulators of
// the 16 registers). Called only where the CPU has both (exact_gemm.cc).
#pragma GCC target("avx2,fma")
#include "exact_gemm_tiles.h"

namespace minpy_kernels {
namespace gemm {
namespace {

struct V256 {
  using Reg = __m256;
  static constexpr int kLanes = 8, kMR = 4, kNV = 3;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg set1(float x) { return _mm256_set1_ps(x); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg x) { _mm256_storeu_ps(p, x); }
  static __m256i tail_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Reg load_tail(const float* p, __m256i m) { return _mm256_maskload_ps(p, m); }
  static void store_tail(float* p, Reg x, __m256i m) { _mm256_maskstore_ps(p, m, x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
};

}  // namespace

void run_tiles_avx2(const Args& g, int64_t begin, int64_t end) { run_tiles<V256>(g, begin, end); }

// XT[k * M + m] = X[m * K + k] for the columns k in [k0, k1): 8 by 8 blocks transposed in
// registers, the edges one by one.
void transpose_columns_avx2(const float* X, int64_t M, int64_t K, float* XT, int64_t k0, int64_t k1) {
  int64_t m0 = 0;
  for (; m0 + 8 <= M; m0 += 8) {
    int64_t k = k0;
    for (; k + 8 <= k1; k += 8) {
      __m256 r[8], t[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(X + (m0 + i) * K + k);
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
      }
      for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
      }
      for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(XT + (k + i) * M + m0, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(XT + (k + i + 4) * M + m0, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
      }
    }
    for (; k < k1; ++k)
      for (int64_t m = m0; m < m0 + 8; ++m) XT[k * M + m] = X[m * K + k];
  }
  for (int64_t m = m0; m < M; ++m)
    for (int64_t k = k0; k < k1; ++k) XT[k * M + m] = X[m * K + k];
}
int64_t tile_count_avx2(const Args& g) { return tile_count<V256>(g); }

}  // namespace gemm
}  // namespace minpy_kernels
