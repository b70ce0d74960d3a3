// The register tiles of exact_gemm.h, written once over a vector type: included by
// exact_gemm_avx512.cc and exact_gemm_avx2.cc after each sets its target, so the same
// source is compiled for both instruction sets. Every output element is one FMA chain per
// reduction block (exact_gemm.h), whichever tile shape or thread computes it.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "exact_gemm.h"

namespace minpy_kernels {
namespace gemm {

using TileFn = void (*)(const Args& g, int64_t i0, int64_t j0, int64_t jn);

// A tile: MR rows of C (i0 ..) by NV vectors of columns (j0 ..), the last vector holding only
// `jn - (NV - 1) * V::kLanes` columns when TAIL.
template <class V, int MR, int NV, bool TAIL>
void tile(const Args& g, int64_t i0, int64_t j0, int64_t jn) {
  using R = typename V::Reg;
  constexpr int W = V::kLanes;
  const int last = TAIL ? static_cast<int>(jn - (NV - 1) * W) : W;
  const auto tail = V::tail_mask(last);
  const float* a_row[MR];
  for (int m = 0; m < MR; ++m) a_row[m] = g.A + (i0 + m) * g.a_is;
  const int64_t kc = g.kc > 0 ? g.kc : g.R;
  const bool one_block = g.R <= kc;
  R acc[MR][NV];
  // One reduction block [r0, r1) into acc: FMA chains from zero, r ascending.
  auto block = [&](int64_t r0, int64_t r1) {
    for (int m = 0; m < MR; ++m)
      for (int v = 0; v < NV; ++v) acc[m][v] = V::zero();
    const float* b = g.B + r0 * g.ldb + j0;
    for (int64_t r = r0; r < r1; ++r, b += g.ldb) {
      R bv[NV];
      for (int v = 0; v < NV; ++v) bv[v] = (TAIL && v == NV - 1) ? V::load_tail(b + v * W, tail) : V::load(b + v * W);
      for (int m = 0; m < MR; ++m) {
        const R a = V::set1(a_row[m][r * g.a_rs]);
        for (int v = 0; v < NV; ++v) acc[m][v] = V::fma(a, bv[v], acc[m][v]);
      }
    }
  };
  block(0, std::min(g.R, kc));
  if (!one_block) {  // the blocks' sums added in order, into acc
    R total[MR][NV];
    for (int m = 0; m < MR; ++m)
      for (int v = 0; v < NV; ++v) total[m][v] = acc[m][v];
    for (int64_t r0 = kc; r0 < g.R; r0 += kc) {
      block(r0, std::min(g.R, r0 + kc));
      for (int m = 0; m < MR; ++m)
        for (int v = 0; v < NV; ++v) total[m][v] = V::add(total[m][v], acc[m][v]);
    }
    for (int m = 0; m < MR; ++m)
      for (int v = 0; v < NV; ++v) acc[m][v] = total[m][v];
  }
  if (g.c_js == 1) {  // rows of C contiguous: vector stores
    for (int m = 0; m < MR; ++m) {
      const R bias = g.bias ? V::set1(g.bias[i0 + m]) : V::zero();
      for (int v = 0; v < NV; ++v) {
        const R c = g.bias ? V::add(acc[m][v], bias) : acc[m][v];
        float* dst = g.C + (i0 + m) * g.c_is + j0 + v * W;
        if (TAIL && v == NV - 1) V::store_tail(dst, c, tail);
        else V::store(dst, c);
      }
    }
    return;
  }
  // C transposed (the forward's Y): the tile's MR values of each column j are neighbours in
  // memory (c_is == 1), so they are written column by column, one cache line at a time.
  alignas(64) float out[MR][NV * W];
  for (int m = 0; m < MR; ++m) {
    const R bias = g.bias ? V::set1(g.bias[i0 + m]) : V::zero();
    for (int v = 0; v < NV; ++v) V::store(&out[m][v * W], g.bias ? V::add(acc[m][v], bias) : acc[m][v]);
  }
  for (int64_t j = 0; j < jn; ++j) {
    float* dst = g.C + (j0 + j) * g.c_js + i0 * g.c_is;
    for (int m = 0; m < MR; ++m) dst[m * g.c_is] = out[m][j];
  }
}

// The tile functions of one instruction set, by rows (1..kMR), vectors (1..kNV) and tail.
template <class V>
struct Tiles {
  static constexpr int kMR = V::kMR, kNV = V::kNV;
  TileFn fn[kMR + 1][kNV + 1][2] = {};

  template <int MR, int NV>
  void fill_one() {
    fn[MR][NV][0] = &tile<V, MR, NV, false>;
    fn[MR][NV][1] = &tile<V, MR, NV, true>;
  }
  template <int MR, int... NVs>
  void fill_row(std::integer_sequence<int, NVs...>) {
    (fill_one<MR, NVs + 1>(), ...);
  }
  template <int... MRs>
  void fill(std::integer_sequence<int, MRs...>) {
    (fill_row<MRs + 1>(std::make_integer_sequence<int, kNV>{}), ...);
  }
  Tiles() { fill(std::make_integer_sequence<int, kMR>{}); }
};

// Runs the tiles of C whose index (i tile * j tiles + j tile) is in [begin, end).
template <class V>
void run_tiles(const Args& g, int64_t begin, int64_t end) {
  static const Tiles<V> tiles;
  constexpr int W = V::kLanes;
  const int64_t jw = V::kNV * W;
  const int64_t j_tiles = (g.J + jw - 1) / jw;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t i0 = (t / j_tiles) * V::kMR, j0 = (t % j_tiles) * jw;
    const int mr = static_cast<int>(std::min<int64_t>(V::kMR, g.I - i0));
    const int64_t jn = std::min(jw, g.J - j0);
    const int nv = static_cast<int>((jn + W - 1) / W);
    const bool tail = jn % W != 0;
    tiles.fn[mr][nv][tail ? 1 : 0](g, i0, j0, jn);
  }
}

template <class V>
int64_t tile_count(const Args& g) {
  const int64_t jw = V::kNV * V::kLanes;
  return ((g.I + V::kMR - 1) / V::kMR) * ((g.J + jw - 1) / jw);
}

}  // namespace gemm
}  // namespace minpy_kernels
