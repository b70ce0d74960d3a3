// Vectorizable float32 transcendentals for the fused elementwise kernels.
//
// Why: libm's expf/tanhf/log1pf are scalar calls, so a loop over them never
// vectorizes (MXNet's non-AVX wheel spends ~16 ns per tanh element). These
// functions are straight-line, branch-free code (selects only), so GCC
// vectorizes loops that call them.
//
// How they stay accurate: each float input is widened to double and the work
// is done in double precision, where a short polynomial has a relative error
// below 1e-9; rounding that to float gives the correctly rounded result unless
// the true value lies within ~1e-9 relative of a rounding boundary, so the
// error stays below ~0.51 ulp (the tests check <= 2 ulp). Denormal float
// inputs and results are ordinary doubles, so they need no special handling.
//
// Compared with the vector math libraries in Debian's packages, on this machine
// kind (AVX2, one core; cpp/kernels/dev/vmath_compare.cc), max ulp against
// float64 / ns per element:
//   tanh:    ours 0.505 / 1.75; SLEEF 3.5 u10 1.0 / 2.2, u35 2.5 / 0.9;
//            Highway 1.0 contrib/math 2.5 / 2.2; xsimd 8.1 1.2 / 1.0
//   sigmoid: ours 0.501 / 1.32; 1/(1+exp(-x)) from SLEEF / xsimd exp 0.7 / 0.6 ns,
//            but their exp overflows below x = -88 (then 0 where the answer is tiny)
//   exp:     ours 0.501 / 1.11; SLEEF 0.92 / 0.55; Highway 0.95 / 1.4; xsimd 0.4 ns
//            but wrong near overflow
//   log:     ours 0.500 / 2.27; SLEEF u10 0.58 / 1.05; Highway 0.78 / 1.03; xsimd 0.75 / 0.64
// (MXNet's own nd.tanh: 2.16 ulp.) Kept ours: on tanh, the function that matters
// most here (W2, LSTM gates, and its derivative 1 - y^2 cancels), no library is
// both faster and as close to correctly rounded, and a system package would
// become part of the install. Float32 forms of tanh and sigmoid were tried (8
// lanes; 1.0 / 1.97 ulp over all 2^32 inputs, 1.44 / 1.0 ns): results then
// differ from eager MXNet beyond the tests' 1e-6 relative tolerance, mostly
// through tanh's derivative, for 17-25% less time per function.
//
// Methods (textbook, see e.g. J.-M. Muller, "Elementary Functions", ch. 11):
//  - exp: Cody-Waite range reduction x = n*ln2 + r, |r| <= ln2/2, Taylor
//    polynomial of degree 8 for e^r, 2^n built in the exponent bits.
//  - log: x = 2^e * m, m in [sqrt(1/2), sqrt(2)), log m = 2*atanh(s) with
//    s = (m-1)/(m+1), odd series in s up to s^11.
//  - log1p(t): Goldberg's trick, log1p(t) = log(u) * t / (u - 1), u = 1 + t
//    (D. Goldberg, "What every computer scientist should know about
//    floating-point arithmetic", 1991, Theorem 4).
//  - tanh: odd Taylor polynomial for |x| < 1/16 (accurate near 0), else
//    1 - 2/(e^{2|x|} + 1) with the sign restored.
// Must be compiled WITHOUT -ffast-math (NaN/inf/signed-zero handling and the
// round-to-integer shifter trick rely on IEEE semantics).
#pragma once

#include <cstdint>
#include <cstring>

namespace minpy_kernels {
namespace vm {

#define VM_INLINE static inline __attribute__((always_inline))

VM_INLINE uint64_t bits_of(double x) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
VM_INLINE double double_of(uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// e^x for x already clamped to [-160, 160] (NaN passes through as NaN).
VM_INLINE double exp_core(double x) {
  const double kLog2e = 1.4426950408889634;
  const double kShifter = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  // fdlibm's split of ln2: kLn2Hi has 32 trailing zero bits, so n*kLn2Hi is exact.
  const double kLn2Hi = 6.93147180369123816490e-01;
  const double kLn2Lo = 1.90821492927058770002e-10;
  double t = x * kLog2e + kShifter;
  double n = t - kShifter;                        // round(x / ln2)
  double r = (x - n * kLn2Hi) - n * kLn2Lo;      // |r| <= ~0.347
  // Taylor series of e^r up to r^8/8!: truncation error < 3e-10 relative,
  // far below float's 6e-8 ulp. Estrin's scheme keeps the dependency chain
  // short (the loop is latency bound with Horner's rule).
  double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  double p01 = 1.0 + r;
  double p23 = 0.5 + r * (1.0 / 6.0);
  double p45 = (1.0 / 24.0) + r * (1.0 / 120.0);
  double p67 = (1.0 / 720.0) + r * (1.0 / 5040.0);
  double p03 = p01 + r2 * p23;
  double p47 = p45 + r2 * p67;
  double p = (p03 + r4 * p47) + r8 * (1.0 / 40320.0);
  // The low bits of t hold n (two's complement); (n + 1023) << 52 is 2^n.
  // |n| <= 231 keeps the biased exponent inside the normal range.
  double scale = double_of((bits_of(t) + 1023u) << 52);
  return p * scale;
}

// log(x) for finite, positive, normal double x (every positive float is one).
VM_INLINE double log_core(double x) {
  const double kLn2 = 0.69314718055994530942;
  const double kSqrt2 = 1.41421356237309504880;
  const double kTwo52 = 4503599627370496.0;
  uint64_t b = bits_of(x);
  // Biased exponent as a double without an int64->double conversion (which
  // would not vectorize before AVX-512DQ): 2^52 + E has E in its low bits.
  double ebias = double_of((b >> 52) | 0x4330000000000000ull) - kTwo52;
  double m = double_of((b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);  // [1, 2)
  bool big = m > kSqrt2;
  m = big ? m * 0.5 : m;
  double e = (big ? ebias + 1.0 : ebias) - 1023.0;
  double f = m - 1.0;  // exact
  double s = f / (2.0 + f);
  double s2 = s * s;    // <= 0.0295
  // 2*atanh(s) = 2s + 2s*(s^2/3 + s^4/5 + ... + s^10/11); next term < 1e-10 relative.
  double s4 = s2 * s2;
  double q = (1.0 / 3.0 + s2 * (1.0 / 5.0)) + s4 * ((1.0 / 7.0 + s2 * (1.0 / 9.0)) + s4 * (1.0 / 11.0));
  double logm = 2.0 * s + (2.0 * s) * (s2 * q);
  return e * kLn2 + logm;
}

VM_INLINE double clampd(double x, double lo, double hi) {
  // NaN fails both comparisons and passes through.
  return x < lo ? lo : (x > hi ? hi : x);
}

VM_INLINE float exp_f(float xf) {
  return static_cast<float>(exp_core(clampd(xf, -160.0, 160.0)));
}

VM_INLINE float log_f(float xf) {
  double x = xf;
  double y = log_core(x > 0.0 ? x : 1.0);  // keep the core on its domain
  const double kInf = __builtin_inf();
  y = (x == 0.0) ? -kInf : y;               // log(+-0) = -inf
  y = (x < 0.0) ? __builtin_nan("") : y;    // log(x<0) = NaN
  y = (x == kInf) ? kInf : y;
  y = (x != x) ? x : y;                     // NaN in, NaN out
  return static_cast<float>(y);
}

VM_INLINE float tanh_f(float xf) {
  double x = xf;
  double ax = __builtin_fabs(x);
  // Small |x|: tanh x = x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - 1382x^11/155925
  double x2 = x * x;
  double x4 = x2 * x2;
  double q = (-1.0 / 3.0 + x2 * (2.0 / 15.0)) +
             x4 * ((-17.0 / 315.0 + x2 * (62.0 / 2835.0)) + x4 * (-1382.0 / 155925.0));
  double small = x * (1.0 + x2 * q);  // x * (...) keeps the sign of zero
  // Large |x|: 1 - 2/(e^{2|x|}+1); tanh(20) rounds to 1 in float, so clamp there.
  double e = exp_core(2.0 * clampd(ax, 0.0, 20.0));
  double big = __builtin_copysign(1.0 - 2.0 / (e + 1.0), x);
  return static_cast<float>(ax < 0.0625 ? small : big);  // NaN takes 'big' = NaN
}

// Rounded once (Activation(act_type='sigmoid'), which runs oneDNN's kernel in MXNet's wheel:
// closer to this than to the float formula below).
VM_INLINE float sigmoid_f(float xf) {
  double e = exp_core(clampd(-static_cast<double>(xf), -160.0, 160.0));
  return static_cast<float>(1.0 / (1.0 + e));
}

// MXNet's sigmoid operator: its expression in float (mshadow_op::sigmoid, 1.0f / (1.0f +
// expf(-x))) on our exp. Eager's result carries the roundings of that + and /, so this
// equals eager's bits wherever our exp equals libm's expf (all but 0.0017% of the 2^32
// floats), where the sigmoid rounded once differed in about a third of typical inputs (by
// 1-2 ulp). exp_f overflows to inf and underflows to 0 where expf does.
VM_INLINE float sigmoid_f32(float xf) {
  const float e = exp_f(-xf);
  return 1.0f / (1.0f + e);
}

// MXNet's softrelu: x > 20 ? x : log1p(exp(x)).
VM_INLINE float softrelu_f(float xf) {
  double x = xf;
  double t = exp_core(clampd(x, -160.0, 20.0));
  double u = 1.0 + t;
  double um1 = u - 1.0;
  double l = log_core(u) * (t / (um1 == 0.0 ? 1.0 : um1));
  l = (um1 == 0.0) ? t : l;  // u rounded to 1: log1p(t) = t to double precision
  return xf > 20.0f ? xf : static_cast<float>(l);
}

#undef VM_INLINE

}  // namespace vm
}  // namespace minpy_kernels
