// onednn_softmax.h's AVX-512 rows, sixteen lanes in one register, as oneDNN's own JIT kernel
// runs them, four rows at a time (onednn_softmax.h models that kernel one lane at a time, in
// scalar code: W3's loss, 64 rows of 10, took 6.7 us forward and 3.5 us backward that way, on
// the thread running a step's launch; here 3.5 and 1.6, onednn_softmax_lanes_check.cc). Every lane runs the same float operations in the same order as there --
// the same max and add with x86's NaN rules, oneDNN's exp (onednn_eltwise.h's, whose F16 lanes
// equal its scalar form), the same butterflies, the backward's one vfnmadd231ps -- so the bits
// are the scalar model's, which are MXNet's (the checks in onednn_softmax.h's top comment);
// cpp/kernels/dev/onednn_softmax_lanes_check.cc compares the two on random and special rows.
// A file of its own for the reason vmath_avx512.cc gives: F16 is one register only where
// vmath.h is first seen with AVX-512 enabled. Called only where oneDNN picked its avx512_common
// kernel (onednn_softmax_vector_width() == 16), which needs AVX-512F.
#include <cstdint>
#include <cstring>
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")

#include "onednn_softmax.h"

namespace minpy_kernels {
namespace onednn_softmax {
namespace {

using vm::F16;
using L = vm::Lanes<F16>;
using U16 = L::U;

constexpr int W = 16;

inline __mmask16 first(int64_t m) { return m >= W ? 0xffff : static_cast<__mmask16>((1u << m) - 1u); }
inline F16 splat(float v) { return F16{} + v; }
inline F16 load(const float* p, int64_t m, F16 fill) {  // lanes past m keep `fill`
  return (F16)_mm512_mask_loadu_ps((__m512)fill, first(m), p);
}
inline void store(float* p, int64_t m, F16 v) { _mm512_mask_storeu_ps(p, first(m), (__m512)v); }
inline F16 pick(__mmask16 k, F16 a, F16 b) {  // a where k, else b
  return (F16)_mm512_mask_blend_ps(k, (__m512)b, (__m512)a);
}

// maxps / addps as the scalar model spells them (max_x86, add_x86): the second operand where
// the comparison is false; the first NaN operand, quieted.
inline F16 max_lanes(F16 a, F16 b) { return a > b ? a : b; }
inline F16 quiet(F16 x) { return L::as_f(L::as_u(x) | 0x400000u); }
inline F16 add_lanes(F16 a, F16 b) { return a != a ? quiet(a) : (b != b ? quiet(b) : a + b); }

// v[l] = op(v[l], v[l ^ s]) for s = 8, 4, 2, 1 (vshuff32x4 0x4e, 0xb1; vshufps 0x4e, 0xb1).
template <bool kMax>
inline F16 butterfly(F16 v) {
  for (unsigned s = W / 2; s >= 1; s /= 2) {
    U16 idx;
    for (unsigned l = 0; l < W; ++l) idx[l] = l ^ s;
    const F16 t = __builtin_shuffle(v, idx);
    v = kMax ? max_lanes(v, t) : add_lanes(v, t);
  }
  return v;
}

// The row's log from its lane sums: one log for the row unless a NaN made the lanes differ
// (onednn_softmax.h's forward_row).
inline F16 row_log(F16 vsum, int64_t n) {
  const int used = n < W ? static_cast<int>(n) : W;
  const __mmask16 differ = _mm512_mask_cmpneq_epi32_mask(first(used), (__m512i)vsum,
                                                         _mm512_set1_epi32(static_cast<int>(u_of(vsum[0]))));
  if (!differ) return splat(log_jit(vsum[0]));
  F16 lg = F16{};
  for (int l = 0; l < used; ++l) lg[l] = log_jit(vsum[l]);
  return lg;
}

// R rows of n at once (row r at x + r * n): the rows are independent, so their dependency
// chains (the butterflies, exp's polynomial, the log) overlap; each row's operations are those
// of one row alone.
template <int R>
void forward_rows(const float* x, float* y, int64_t n) {
  const int64_t full = n / W * W;
  F16 vmax[R], vsum[R], lg[R];
  for (int r = 0; r < R; ++r) vmax[r] = splat(kNegFltMax);
  for (int64_t j = 0; j < full; j += W)
    for (int r = 0; r < R; ++r) vmax[r] = max_lanes(vmax[r], load(x + r * n + j, W, F16{}));
  if (n > full)  // masked: a lane past the row keeps its max
    for (int r = 0; r < R; ++r) vmax[r] = max_lanes(vmax[r], load(x + r * n + full, n - full, vmax[r]));
  for (int r = 0; r < R; ++r) {
    vmax[r] = butterfly<true>(vmax[r]);
    vsum[r] = F16{};
  }
  for (int64_t j = 0; j < n; j += W) {
    const int64_t m = n - j;
    for (int r = 0; r < R; ++r) {
      const F16 d = load(x + r * n + j, m, F16{}) - vmax[r];
      store(y + r * n + j, m, d);
      const F16 s = add_lanes(vsum[r], onednn_exp_fwd<F16>(d));
      vsum[r] = m >= W ? s : pick(first(m), s, vsum[r]);
    }
  }
  for (int r = 0; r < R; ++r) lg[r] = row_log(butterfly<false>(vsum[r]), n);
  for (int64_t j = 0; j < n; j += W)
    for (int r = 0; r < R; ++r) store(y + r * n + j, n - j, load(y + r * n + j, n - j, F16{}) - lg[r]);
}

template <int R>
void backward_rows(const float* dy, const float* y, float* dx, int64_t n) {
  F16 sbr[R];
  for (int r = 0; r < R; ++r) sbr[r] = F16{};
  for (int64_t j = 0; j < n; j += W)
    for (int r = 0; r < R; ++r) sbr[r] = add_lanes(sbr[r], load(dy + r * n + j, n - j, F16{}));  // zero-masked tail
  for (int r = 0; r < R; ++r) sbr[r] = butterfly<false>(sbr[r]);
  for (int64_t j = 0; j < n; j += W) {
    const int64_t m = n - j;
    for (int r = 0; r < R; ++r) {
      __m512 d = (__m512)load(dy + r * n + j, m, F16{});
      const __m512 e = (__m512)onednn_exp_fwd<F16>(load(y + r * n + j, m, F16{}));
      __asm__("vfnmadd231ps %2, %1, %0" : "+v"(d) : "v"(e), "v"((__m512)sbr[r]));  // oneDNN's instruction
      store(dx + r * n + j, m, (F16)d);
    }
  }
}

constexpr int64_t kRows = 4;

}  // namespace
}  // namespace onednn_softmax

void log_softmax_rows_forward_avx512(const float* x, float* y, int64_t rows, int64_t cols) {
  using namespace onednn_softmax;
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) forward_rows<kRows>(x + r * cols, y + r * cols, cols);
  for (; r < rows; ++r) forward_rows<1>(x + r * cols, y + r * cols, cols);
}

void log_softmax_rows_backward_avx512(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols) {
  using namespace onednn_softmax;
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) backward_rows<kRows>(dy + r * cols, y + r * cols, dx + r * cols, cols);
  for (; r < rows; ++r) backward_rows<1>(dy + r * cols, y + r * cols, dx + r * cols, cols);
}

}  // namespace minpy_kernels

#pragma GCC pop_options
