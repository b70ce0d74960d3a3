// Developer comparison (not part of the library): the functions our fused kernels run for
// tanh, exp, sigmoid and log (vmath.h's reproductions of glibc; log calls libm's logf)
// against glibc's scalar libm (what eager MXNet calls) and SLEEF 3.5 (Debian's libsleef-dev),
// in AVX2 and AVX-512 builds. Per function and implementation:
//   max ulp   the largest error against the double-precision value, over every STEP-th
//             float32 bit pattern in the function's useful range;
//   != eager  the share of 1M inputs in [-8, 8] (log: (0, 16]) whose result differs in any
//             bit from glibc's scalar function, i.e. from eager MXNet's result;
//   ns/elem   one core, 1M float32 in that range, best of 15 passes.
// Needs libsleef-dev (apt-get install libsleef-dev); from the repo root:
//   g++ -O3 -std=c++17 -mavx2 -mfma -ffp-contract=off -fno-math-errno -fno-trapping-math \
//       -Icpp/kernels cpp/kernels/dev/vmath_compare.cc cpp/kernels/vmath_avx512.cc \
//       cpp/kernels/libm_check.cc -o /tmp/vmath_compare -lsleef && /tmp/vmath_compare 257
// (AVX-512 rows print n/a on a CPU without AVX-512F.)
#include <immintrin.h>
#include <sleef.h>
#ifndef __AVX512F__  // sleef.h declares its AVX-512 entry points only for an AVX-512 build
extern "C" {
__m512 Sleef_tanhf16_u10avx512f(__m512);
__m512 Sleef_tanhf16_u35avx512f(__m512);
__m512 Sleef_expf16_u10avx512f(__m512);
__m512 Sleef_logf16_u10avx512f(__m512);
__m512 Sleef_logf16_u35avx512f(__m512);
}
#endif

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vmath.h"
#include "vmath_avx512.h"

using namespace minpy_kernels::vm;
typedef void (*Fn)(const float*, float*, long);
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f")))

static const uint64_t* table() { return exp2_table().bits; }

// ours: what fused_elemwise.cc runs (glibc built with FMA: expf_glibc<true>)
AVX2 void o_tanh8(const float* a, float* d, long n) { tanhf_fdlibm_loop<F8>(d, a, n); }
void o_tanh16(const float* a, float* d, long n) { tanhf_loop_avx512(d, a, n); }
AVX2 void o_exp2(const float* a, float* d, long n) {
  const uint64_t* t = table();
  for (long i = 0; i < n; ++i) d[i] = expf_glibc<true>(a[i], t);
}
AVX512 void o_exp5(const float* a, float* d, long n) {
  const uint64_t* t = table();
  for (long i = 0; i < n; ++i) d[i] = expf_glibc<true>(a[i], t);
}
AVX2 void o_sig2(const float* a, float* d, long n) {
  const uint64_t* t = table();
  for (long i = 0; i < n; ++i) d[i] = 1.0f / (1.0f + expf_glibc<true>(-a[i], t));
}
AVX512 void o_sig5(const float* a, float* d, long n) {
  const uint64_t* t = table();
  for (long i = 0; i < n; ++i) d[i] = 1.0f / (1.0f + expf_glibc<true>(-a[i], t));
}
// glibc's scalar functions: eager MXNet's results (log: also what our kernel calls)
void l_tanh(const float* a, float* d, long n) { for (long i = 0; i < n; ++i) d[i] = ::tanhf(a[i]); }
void l_exp(const float* a, float* d, long n) { for (long i = 0; i < n; ++i) d[i] = ::expf(a[i]); }
void l_log(const float* a, float* d, long n) { for (long i = 0; i < n; ++i) d[i] = ::logf(a[i]); }
void l_sig(const float* a, float* d, long n) { for (long i = 0; i < n; ++i) d[i] = 1.0f / (1.0f + ::expf(-a[i])); }
// SLEEF, 8 lanes (AVX2) and 16 (AVX-512F); n is a multiple of 16
#define S8(NAME, CALL) AVX2 void NAME(const float* a, float* d, long n) { \
  for (long i = 0; i < n; i += 8) _mm256_storeu_ps(d + i, CALL(_mm256_loadu_ps(a + i))); }
#define S16(NAME, CALL) AVX512 void NAME(const float* a, float* d, long n) { \
  for (long i = 0; i < n; i += 16) _mm512_storeu_ps(d + i, CALL(_mm512_loadu_ps(a + i))); }
S8(s_tanh10_8, Sleef_tanhf8_u10avx2) S8(s_tanh35_8, Sleef_tanhf8_u35avx2) S8(s_exp_8, Sleef_expf8_u10avx2)
S8(s_log10_8, Sleef_logf8_u10avx2) S8(s_log35_8, Sleef_logf8_u35avx2)
S16(s_tanh10_16, Sleef_tanhf16_u10avx512f) S16(s_tanh35_16, Sleef_tanhf16_u35avx512f)
S16(s_exp_16, Sleef_expf16_u10avx512f) S16(s_log10_16, Sleef_logf16_u10avx512f)
S16(s_log35_16, Sleef_logf16_u35avx512f)
AVX2 void s_sig_8(const float* a, float* d, long n) {
  const __m256 one = _mm256_set1_ps(1.f);
  for (long i = 0; i < n; i += 8) {
    const __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_loadu_ps(a + i)));
    _mm256_storeu_ps(d + i, _mm256_div_ps(one, _mm256_add_ps(one, e)));
  }
}
AVX512 void s_sig_16(const float* a, float* d, long n) {
  const __m512 one = _mm512_set1_ps(1.f);
  for (long i = 0; i < n; i += 16) {
    const __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_loadu_ps(a + i)));
    _mm512_storeu_ps(d + i, _mm512_div_ps(one, _mm512_add_ps(one, e)));
  }
}

double r_tanh(double x) { return std::tanh(x); }
double r_exp(double x) { return std::exp(x); }
double r_log(double x) { return std::log(x); }
double r_sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double ulp_err(float y, double ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0 : 1e9;
  if (std::isnan(y)) return 1e9;
  const float rf = static_cast<float>(ref);
  if (std::isinf(rf)) {
    if (y == rf) return 0;
    ref = std::copysign(3.4028234663852886e38, ref);
  }
  if (std::isinf(y)) return 1e9;
  int e;
  std::frexp(ref == 0 ? 1e-300 : ref, &e);
  const int ex = std::max(e - 1, -126);
  return std::fabs(static_cast<double>(y) - ref) / std::ldexp(1.0, ex - 23);
}

struct Case {
  const char* fn;
  const char* impl;
  Fn f;
  Fn eager;
  double (*ref)(double);
  float lo, hi;
  bool avx512;
};

int main(int argc, char** argv) {
  const long step = argc > 1 ? atol(argv[1]) : 257;
  const bool has512 = __builtin_cpu_supports("avx512f");
  const float big = 1e38f;
  const Case cases[] = {
      {"tanh", "ours AVX2 (glibc's algorithm)", o_tanh8, l_tanh, r_tanh, -big, big, false},
      {"tanh", "ours AVX-512", o_tanh16, l_tanh, r_tanh, -big, big, true},
      {"tanh", "glibc tanhf (eager)", l_tanh, l_tanh, r_tanh, -big, big, false},
      {"tanh", "SLEEF u10 AVX2", s_tanh10_8, l_tanh, r_tanh, -big, big, false},
      {"tanh", "SLEEF u35 AVX2", s_tanh35_8, l_tanh, r_tanh, -big, big, false},
      {"tanh", "SLEEF u10 AVX-512", s_tanh10_16, l_tanh, r_tanh, -big, big, true},
      {"tanh", "SLEEF u35 AVX-512", s_tanh35_16, l_tanh, r_tanh, -big, big, true},
      {"sigmoid", "ours AVX2 (1/(1+expf(-x)))", o_sig2, l_sig, r_sig, -87.0f, big, false},
      {"sigmoid", "ours AVX-512", o_sig5, l_sig, r_sig, -87.0f, big, true},
      {"sigmoid", "glibc expf (eager)", l_sig, l_sig, r_sig, -87.0f, big, false},
      {"sigmoid", "SLEEF exp u10 AVX2", s_sig_8, l_sig, r_sig, -87.0f, big, false},
      {"sigmoid", "SLEEF exp u10 AVX-512", s_sig_16, l_sig, r_sig, -87.0f, big, true},
      {"exp", "ours AVX2 (glibc's algorithm)", o_exp2, l_exp, r_exp, -103.9f, 88.7f, false},
      {"exp", "ours AVX-512", o_exp5, l_exp, r_exp, -103.9f, 88.7f, true},
      {"exp", "glibc expf (eager)", l_exp, l_exp, r_exp, -103.9f, 88.7f, false},
      {"exp", "SLEEF u10 AVX2", s_exp_8, l_exp, r_exp, -103.9f, 88.7f, false},
      {"exp", "SLEEF u10 AVX-512", s_exp_16, l_exp, r_exp, -103.9f, 88.7f, true},
      {"log", "ours = glibc logf (eager)", l_log, l_log, r_log, 1e-45f, 3.4e38f, false},
      {"log", "SLEEF u10 AVX2", s_log10_8, l_log, r_log, 1e-45f, 3.4e38f, false},
      {"log", "SLEEF u35 AVX2", s_log35_8, l_log, r_log, 1e-45f, 3.4e38f, false},
      {"log", "SLEEF u10 AVX-512", s_log10_16, l_log, r_log, 1e-45f, 3.4e38f, true},
      {"log", "SLEEF u35 AVX-512", s_log35_16, l_log, r_log, 1e-45f, 3.4e38f, true},
  };
  const long B = 1 << 16, N = 1 << 20;
  std::vector<float> a(B), d(B), x(N), y(N), e(N);
  std::printf("%-8s %-30s %9s %13s %9s %8s\n", "fn", "implementation", "max ulp", "at x", "!= eager", "ns/elem");
  for (const Case& c : cases) {
    if (c.avx512 && !has512) {
      std::printf("%-8s %-30s %9s\n", c.fn, c.impl, "n/a");
      continue;
    }
    double maxe = 0;
    float worst = 0;
    for (unsigned long u = 0; u < (1ul << 32);) {
      long n = 0;
      for (; n < B && u < (1ul << 32); u += step) {
        const unsigned v = static_cast<unsigned>(u);
        float f;
        std::memcpy(&f, &v, 4);
        if (f >= c.lo && f <= c.hi) a[n++] = f;
      }
      while (n % 16) a[n++] = 1.0f;
      c.f(a.data(), d.data(), n);
      for (long i = 0; i < n; ++i) {
        const double err = ulp_err(d[i], c.ref(static_cast<double>(a[i])));
        if (err > maxe) maxe = err, worst = a[i];
      }
    }
    const bool log = std::string(c.fn) == "log";
    for (long i = 0; i < N; ++i) {
      const float t = static_cast<float>((i * 2654435761u % 1000000) / 62500.0 - 8.0);
      x[i] = log ? std::fabs(t) + 1e-3f : t;
    }
    c.eager(x.data(), e.data(), N);
    double best = 1e9;
    for (int r = 0; r < 15; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      c.f(x.data(), y.data(), N);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    long differ = 0;
    for (long i = 0; i < N; ++i) differ += std::memcmp(&y[i], &e[i], 4) != 0;
    std::printf("%-8s %-30s %9.3f %13g %8.3f%% %8.3f\n", c.fn, c.impl, maxe, worst, 100.0 * differ / N,
                best / N * 1e9);
  }
}
