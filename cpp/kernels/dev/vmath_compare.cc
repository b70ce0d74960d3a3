// Developer comparison (not part of the library): speed and ulp error of vmath.h's
// tanh / sigmoid / exp / log against SLEEF, Highway's contrib/math and xsimd, over
// every STEP-th float32 bit pattern (in each function's useful range) and 1M floats in
// [-8, 8]. The numbers quoted in vmath.h came from this. Needs Debian's libsleef-dev,
// libhwy-dev and libxsimd-dev (apt-get install); from the repo root:
//   g++ -O3 -std=c++17 -mavx2 -mfma -ffp-contract=off -fno-math-errno -fno-trapping-math \
//       -Icpp/kernels cpp/kernels/dev/vmath_compare.cc -o /tmp/vmath_compare -lsleef -lhwy \
//       && /tmp/vmath_compare 257
#include <immintrin.h>
#include <sleef.h>
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
#include <xsimd/xsimd.hpp>
#include "vmath.h"
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include <string>
namespace hn = hwy::HWY_NAMESPACE;
using namespace minpy_kernels::vm;
typedef void (*Fn)(const float*, float*, long);
#define LOOP8(body) for (long i = 0; i < n; i += 8) { body }
// ours
void o_tanh(const float* a, float* d, long n) { for (long i = 0; i < n; ++i) d[i] = tanh_f(a[i]); }
void o_exp(const float* a, float* d, long n) { for (long i = 0; i < n; ++i) d[i] = exp_f(a[i]); }
void o_log(const float* a, float* d, long n) { for (long i = 0; i < n; ++i) d[i] = log_f(a[i]); }
void o_sig(const float* a, float* d, long n) { for (long i = 0; i < n; ++i) d[i] = sigmoid_f(a[i]); }
// SLEEF (AVX2, 8 lanes)
void s_tanh10(const float* a, float* d, long n) { LOOP8(_mm256_storeu_ps(d + i, Sleef_tanhf8_u10avx2(_mm256_loadu_ps(a + i)));) }
void s_tanh35(const float* a, float* d, long n) { LOOP8(_mm256_storeu_ps(d + i, Sleef_tanhf8_u35avx2(_mm256_loadu_ps(a + i)));) }
void s_exp(const float* a, float* d, long n) { LOOP8(_mm256_storeu_ps(d + i, Sleef_expf8_u10avx2(_mm256_loadu_ps(a + i)));) }
void s_log10(const float* a, float* d, long n) { LOOP8(_mm256_storeu_ps(d + i, Sleef_logf8_u10avx2(_mm256_loadu_ps(a + i)));) }
void s_log35(const float* a, float* d, long n) { LOOP8(_mm256_storeu_ps(d + i, Sleef_logf8_u35avx2(_mm256_loadu_ps(a + i)));) }
void s_sig(const float* a, float* d, long n) { const __m256 one = _mm256_set1_ps(1.f);
  LOOP8(__m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_loadu_ps(a + i)));
        _mm256_storeu_ps(d + i, _mm256_div_ps(one, _mm256_add_ps(one, e)));) }
// Highway (static AVX2 target)
void h_tanh(const float* a, float* d, long n) { const hn::ScalableTag<float> t; const long L = hn::Lanes(t);
  for (long i = 0; i < n; i += L) hn::StoreU(hn::Tanh(t, hn::LoadU(t, a + i)), t, d + i); }
void h_exp(const float* a, float* d, long n) { const hn::ScalableTag<float> t; const long L = hn::Lanes(t);
  for (long i = 0; i < n; i += L) hn::StoreU(hn::Exp(t, hn::LoadU(t, a + i)), t, d + i); }
void h_log(const float* a, float* d, long n) { const hn::ScalableTag<float> t; const long L = hn::Lanes(t);
  for (long i = 0; i < n; i += L) hn::StoreU(hn::Log(t, hn::LoadU(t, a + i)), t, d + i); }
void h_sig(const float* a, float* d, long n) { const hn::ScalableTag<float> t; const long L = hn::Lanes(t);
  const auto one = hn::Set(t, 1.f);
  for (long i = 0; i < n; i += L) hn::StoreU(hn::Div(one, hn::Add(one, hn::Exp(t, hn::Neg(hn::LoadU(t, a + i))))), t, d + i); }
// xsimd (AVX2)
using B = xsimd::batch<float, xsimd::avx2>;
void x_tanh(const float* a, float* d, long n) { LOOP8(xsimd::tanh(B::load_unaligned(a + i)).store_unaligned(d + i);) }
void x_exp(const float* a, float* d, long n) { LOOP8(xsimd::exp(B::load_unaligned(a + i)).store_unaligned(d + i);) }
void x_log(const float* a, float* d, long n) { LOOP8(xsimd::log(B::load_unaligned(a + i)).store_unaligned(d + i);) }
void x_sig(const float* a, float* d, long n) { LOOP8(B x = B::load_unaligned(a + i); (B(1.f) / (B(1.f) + xsimd::exp(-x))).store_unaligned(d + i);) }

double r_tanh(double x) { return std::tanh(x); }
double r_exp(double x) { return std::exp(x); }
double r_log(double x) { return std::log(x); }
double r_sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double ulp_err(float y, double ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0 : 1e9;
  if (std::isnan(y)) return 1e9;
  float rf = (float)ref;
  if (std::isinf(rf)) { if (y == rf) return 0; ref = std::copysign(3.4028234663852886e38, ref); }
  if (std::isinf(y)) return 1e9;
  int e; std::frexp(ref == 0 ? 1e-300 : ref, &e);
  int ex = e - 1; if (ex < -126) ex = -126;
  return std::fabs((double)y - ref) / std::ldexp(1.0, ex - 23);
}
struct Case { const char* fn; const char* lib; Fn f; double (*r)(double); float lo, hi; };
int main(int argc, char** argv) {
  long step = argc > 1 ? atol(argv[1]) : 257;
  Case cs[] = {
    {"tanh", "ours", o_tanh, r_tanh, -1e38f, 1e38f}, {"tanh", "sleef u10", s_tanh10, r_tanh, -1e38f, 1e38f},
    {"tanh", "sleef u35", s_tanh35, r_tanh, -1e38f, 1e38f}, {"tanh", "highway", h_tanh, r_tanh, -1e38f, 1e38f},
    {"tanh", "xsimd", x_tanh, r_tanh, -1e38f, 1e38f},
    {"sigmoid", "ours", o_sig, r_sig, -1e38f, 1e38f}, {"sigmoid", "sleef u10", s_sig, r_sig, -1e38f, 1e38f},
    {"sigmoid", "highway", h_sig, r_sig, -1e38f, 1e38f}, {"sigmoid", "xsimd", x_sig, r_sig, -1e38f, 1e38f},
    {"exp", "ours", o_exp, r_exp, -87.3f, 88.7f}, {"exp", "sleef u10", s_exp, r_exp, -87.3f, 88.7f},
    {"exp", "highway", h_exp, r_exp, -87.3f, 88.7f}, {"exp", "xsimd", x_exp, r_exp, -87.3f, 88.7f},
    {"log", "ours", o_log, r_log, 1.2e-38f, 3.4e38f}, {"log", "sleef u10", s_log10, r_log, 1.2e-38f, 3.4e38f},
    {"log", "sleef u35", s_log35, r_log, 1.2e-38f, 3.4e38f}, {"log", "highway", h_log, r_log, 1.2e-38f, 3.4e38f},
    {"log", "xsimd", x_log, r_log, 1.2e-38f, 3.4e38f},
  };
  const long B = 1 << 16; std::vector<float> a(B), d(B);
  long N = 1 << 20; std::vector<float> x(N), y(N);
  printf("%-8s %-10s %10s %12s %9s %9s\n", "fn", "lib", "max ulp", "at x", "ns/elem", "(|x|<=8)");
  for (auto& c : cs) {
    double maxe = 0; float worst = 0;
    for (unsigned long u = 0; u < (1ul << 32);) {
      long n = 0;
      for (; n < B && u < (1ul << 32); u += step) { unsigned v = (unsigned)u; float f; memcpy(&f, &v, 4);
        if (f >= c.lo && f <= c.hi) a[n++] = f; }
      while (n % 16) a[n++] = 1.0f;
      c.f(a.data(), d.data(), n);
      for (long i = 0; i < n; ++i) { double e = ulp_err(d[i], c.r((double)a[i])); if (e > maxe) { maxe = e; worst = a[i]; } }
    }
    // speed: 1M floats in a range typical of activations ([-8, 8]; log: (0, 16])
    for (long i = 0; i < N; ++i) { float t = (float)((i * 2654435761u % 1000000) / 62500.0 - 8.0); x[i] = std::string(c.fn) == "log" ? std::fabs(t) + 1e-3f : t; }
    double best = 1e9;
    for (int r = 0; r < 15; ++r) { auto t0 = std::chrono::steady_clock::now(); c.f(x.data(), y.data(), N);
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); if (dt < best) best = dt; }
    printf("%-8s %-10s %10.3f %12g %9.3f\n", c.fn, c.lib, maxe, worst, best / N * 1e9);
  }
}
