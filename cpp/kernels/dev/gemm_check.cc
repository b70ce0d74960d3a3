// Developer check (not part of the library): exact_gemm.h's AVX-512 and AVX2 tiles against a
// scalar reference that sums exactly as the header says (fmaf chains from zero over blocks of
// the reduction, the blocks added in order, the bias last), bit for bit, on 300 random shapes:
// tile edges in both directions, block lengths 0 and 16-512, transposed and plain outputs,
// with and without bias. Needs an AVX-512 CPU (tests/test_fc_kernels.py checks the AVX2 tiles
// against MXNet's operator on any CPU). From the repo root, a few seconds:
//   g++ -std=c++17 -O2 -ffp-contract=off -mfma -pthread -Icpp/kernels cpp/kernels/dev/gemm_check.cc
//       cpp/kernels/exact_gemm.cc cpp/kernels/exact_gemm_avx512.cc cpp/kernels/exact_gemm_avx2.cc
//       cpp/kernels/parallel.cc -o /tmp/gemm_check   (one line)
//   /tmp/gemm_check      # prints "0 of 300 cases differ"
#include "exact_gemm.h"
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
namespace minpy_kernels { namespace gemm {
void run_tiles_avx512(const Args& g, int64_t begin, int64_t end);
int64_t tile_count_avx512(const Args& g);
void run_tiles_avx2(const Args& g, int64_t begin, int64_t end);
int64_t tile_count_avx2(const Args& g);
}}
using namespace minpy_kernels::gemm;
int main() {
  std::mt19937 r(3); std::normal_distribution<float> d;
  int bad = 0, cases = 0;
  for (int it = 0; it < 300; ++it) {
    int64_t I = 1 + r() % 70, J = 1 + r() % 90, R = 1 + r() % 900; int64_t kc = (r() % 3 == 0) ? 0 : (16 << (r() % 6));
    bool trans = r() % 2, bias = r() % 2;
    std::vector<float> A(I * R), B(R * J), b(I), C1(I * J, -1), C2(I * J, -2);
    for (auto& v : A) v = d(r); for (auto& v : B) v = d(r); for (auto& v : b) v = d(r);
    Args g; g.I = I; g.J = J; g.R = R; g.A = A.data(); g.a_is = R; g.a_rs = 1; g.B = B.data(); g.ldb = J;
    g.c_is = trans ? 1 : J; g.c_js = trans ? I : 1; g.bias = bias ? b.data() : nullptr; g.kc = kc;
    g.C = C1.data(); run_tiles_avx512(g, 0, tile_count_avx512(g));
    g.C = C2.data(); run_tiles_avx2(g, 0, tile_count_avx2(g));
    // reference: scalar fma chain per block
    std::vector<float> ref(I * J);
    for (int64_t i = 0; i < I; ++i) for (int64_t j = 0; j < J; ++j) {
      int64_t k = kc > 0 ? kc : R; float tot = 0; bool first = true;
      for (int64_t r0 = 0; r0 < R; r0 += k) { float acc = 0; for (int64_t q = r0; q < std::min(R, r0 + k); ++q) acc = __builtin_fmaf(A[i * R + q], B[q * J + j], acc); tot = first ? acc : tot + acc; first = false; }
      if (bias) tot = tot + b[i];
      ref[i * g.c_is + j * g.c_js] = tot;
    }
    ++cases;
    if (memcmp(C1.data(), ref.data(), 4 * I * J) || memcmp(C2.data(), ref.data(), 4 * I * J)) { ++bad; printf("bad I%ld J%ld R%ld kc%ld trans%d\n", I, J, R, kc, trans); }
  }
  printf("%d of %d cases differ\n", bad, cases);
}
