// Vectorizable float32 transcendentals for the fused elementwise kernels.
//
// Why: libm's expf/tanhf/log1pf are scalar calls, so a loop over them never
// vectorizes (MXNet's non-AVX wheel spends ~16 ns per tanh element). These
// functions are straight-line, branch-free code (selects only), so loops over
// them vectorize.
//
// Two families:
//  - The tanh, exp and sigmoid operators (instructions tanh, exp, sigmoid_f32) must give
//    eager MXNet's bits, which are glibc's tanhf / expf: the second half of this file
//    reproduces glibc's algorithms (checked against the running libm: libm_check.h).
//    Measured in a stand-alone loop (g++ -O3, target avx2) over 1M floats in [-7, 7], one
//    core of this machine kind, ns per element: tanh 3.2 (glibc's scalar tanhf 11.5; the correctly rounded tanh this file
//    had before, 1.8, differed from eager's bits on 14% of inputs), exp 1.0. A kernel tile of
//    tanh inputs all below 1 in magnitude, or all at least 1, takes a shorter form of the same
//    algorithm (tanhf_fdlibm_loop): in tiles of 512, uniform(-1, 1) 2.36 -> 1.46 ns an element,
//    uniform(1, 7) 2.36 -> 1.58, mixed tiles (uniform(-3, 3)) unchanged at 2.36
//    (cpp/kernels/dev/tanh_check.cc, which also checks the loop on all 2^32 inputs).
//  - exp_core / log_core below, in double precision, rounded once (< 0.51 ulp): the
//    instructions sigmoid and softrelu, MXNet's Activation forms. The fuser does not emit
//    those today (eager runs Activation through oneDNN, whose results neither libm nor these
//    match: cpp/src/fuse.cc); they remain for programs that ask for them.
//
// How exp_core / log_core stay accurate: each float input is widened to double and the work
// is done in double precision, where a short polynomial has a relative error below 1e-9;
// rounding that to float gives the correctly rounded result unless the true value lies
// within ~1e-9 relative of a rounding boundary, so the error stays below ~0.51 ulp.
// The functions the fused kernels run (the glibc reproductions below; log calls logf) against
// SLEEF 3.5 (Debian's libsleef-dev), cpp/kernels/dev/vmath_compare.cc: max ulp against float64
// (every 4099th float32) / share of 1M inputs in [-8, 8] whose bits differ from eager's (glibc's
// scalar function) / ns per element over 1M float32, one core, best of 15, AVX2 and AVX-512:
//   tanh     ours 2.07 / 0 / 3.13, 1.90;  SLEEF u10 1.00 / 6.8% / 2.13, 1.44;  u35 2.52 / 8.3% / 0.86, 0.51
//   sigmoid  ours 1.97 / 0 / 0.89, 0.78;  on SLEEF's exp u10 1.97 / 4.1% / 0.69, 0.37
//   exp      ours 0.50 / 0 / 1.00, 0.69;  SLEEF u10 0.92 / 9.5% / 0.56, 0.29
//   log      ours (logf) 0.68 / 0 / 3.25; SLEEF u10 0.58 / 0.78% / 1.08, 0.53; u35 2.41 / 12.9% / 0.65, 0.23
// (glibc's scalar tanhf 27-92 ns, expf 3.0, on this shared machine.) SLEEF is 1.3-6x faster and
// differs from eager's result on 0.8-13% of inputs: every fused op must give eager's bits, so no
// SLEEF. An earlier comparison (commit 489ab10, against this file's correctly rounded functions)
// found Highway's contrib/math and xsimd no better. What is left to gain exactly: log, whose
// glibc algorithm (table-driven, in double, like expf) could be reproduced as expf is here.
//
// Methods (textbook, see e.g. J.-M. Muller, "Elementary Functions", ch. 11):
//  - exp: Cody-Waite range reduction x = n*ln2 + r, |r| <= ln2/2, Taylor
//    polynomial of degree 8 for e^r, 2^n built in the exponent bits.
//  - log: x = 2^e * m, m in [sqrt(1/2), sqrt(2)), log m = 2*atanh(s) with
//    s = (m-1)/(m+1), odd series in s up to s^11.
//  - log1p(t): Goldberg's trick, log1p(t) = log(u) * t / (u - 1), u = 1 + t
//    (D. Goldberg, "What every computer scientist should know about
//    floating-point arithmetic", 1991, Theorem 4).
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

// Rounded once (Activation(act_type='sigmoid'), which runs oneDNN's kernel in MXNet's wheel:
// closer to this than to the float formula below).
VM_INLINE float sigmoid_f(float xf) {
  double e = exp_core(clampd(-static_cast<double>(xf), -160.0, 160.0));
  return static_cast<float>(1.0 / (1.0 + e));
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

// ---- glibc's own results, reproduced --------------------------------------------------
// Eager MXNet's tanh, exp and sigmoid operators call glibc's scalar tanhf and expf (checked
// bit for bit on 2M inputs: mshadow's float functors call ::tanhf, ::expf). The functions
// above are closer to the true values, but "closer" is a different result: 14% of tanh
// inputs and 0.08% of exp inputs rounded differently from eager's. These reproduce the
// algorithms of glibc 2.36 (Debian 12) operation for operation, as straight-line code that
// vectorizes, and equal its results on all 2^32 float inputs (checked exhaustively on this
// machine kind). Another libm may compute differently, so the library checks these against
// the libm it is linked with when it loads (libm_check.h) and calls libm itself otherwise.

// Lanes for code written once for one float and for eight (GCC's vector extension, which
// the AVX2 clone turns into AVX instructions and the default clone into SSE pairs): the same
// operations in the same order, so the scalar tail of a loop gives the vector body's bits.
// (fdlibm's branches, written as selects, are too many for GCC to vectorize on its own.)
// F8 values are passed only between always_inline functions, so GCC's note that a 32-byte
// vector argument changes the ABI of non-AVX code does not apply (GCC reports it where a
// template is instantiated, in the including file, so the pragma stays on to the end).
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef uint32_t U8 __attribute__((vector_size(32)));
template <class F> struct Lanes;
template <> struct Lanes<float> {
  using I = int32_t;
  using U = uint32_t;
  __attribute__((always_inline)) static U as_u(float x) { U u; std::memcpy(&u, &x, sizeof u); return u; }
  __attribute__((always_inline)) static float as_f(U u) { float x; std::memcpy(&x, &u, sizeof x); return x; }
  __attribute__((always_inline)) static I to_i(float x) { return static_cast<I>(x); }  // truncates, like C's (int)
  __attribute__((always_inline)) static float to_f(I i) { return static_cast<float>(i); }
  __attribute__((always_inline)) static U i_to_u(I i) { return static_cast<U>(i); }
};
template <> struct Lanes<F8> {
  using I = I8;
  using U = U8;
  __attribute__((always_inline)) static U as_u(F8 x) { return (U8)x; }  // same-size vector casts keep the bits
  __attribute__((always_inline)) static F8 as_f(U u) { return (F8)u; }
  __attribute__((always_inline)) static I to_i(F8 x) { return __builtin_convertvector(x, I8); }
  __attribute__((always_inline)) static F8 to_f(I i) { return __builtin_convertvector(i, F8); }
  __attribute__((always_inline)) static U i_to_u(I i) { return (U8)i; }
};
// Sixteen lanes: one AVX-512 register where the including file is built for AVX-512
// (vmath_avx512.cc); elsewhere GCC splits F16 into narrower pieces, far slower.
typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
typedef uint32_t U16 __attribute__((vector_size(64)));
template <> struct Lanes<F16> {
  using I = I16;
  using U = U16;
  __attribute__((always_inline)) static U as_u(F16 x) { return (U16)x; }
  __attribute__((always_inline)) static F16 as_f(U u) { return (F16)u; }
  __attribute__((always_inline)) static I to_i(F16 x) { return __builtin_convertvector(x, I16); }
  __attribute__((always_inline)) static F16 to_f(I i) { return __builtin_convertvector(i, F16); }
  __attribute__((always_inline)) static U i_to_u(I i) { return (U16)i; }
};

// expm1f of the classic fdlibm float algorithm (glibc's sysdeps/ieee754/flt-32 s_expm1f):
// reduce x = k*ln2 + r (r split hi/lo), a rational approximation of expm1 on r, then one
// of six reconstructions chosen by k. The pieces below are shared by expm1f_fdlibm, which
// computes all six and selects one, and tanh's shorter forms, which compute only those their
// arguments can reach: each runs the same float operations in the same order.
constexpr float kExpm1Ln2Hi = 6.9313812256e-01f, kExpm1Ln2Lo = 9.0580006145e-06f, kExpm1InvLn2 = 1.4426950216e+00f;

// The rational approximation on the reduced argument r (c: the reduction's correction).
template <class F>
struct Expm1Core {
  F hxs, e0, e;  // fdlibm's names: r*r/2, the approximation's correction term, and e
};
template <class F>
VM_INLINE Expm1Core<F> expm1f_core(F r, F c) {
  const float Q1 = -3.3333335072e-02f, Q2 = 1.5873016091e-03f, Q3 = -7.9365076090e-05f,
              Q4 = 4.0082177293e-06f, Q5 = -2.0109921195e-07f;
  const F hfx = 0.5f * r, hxs = r * hfx;
  const F r1 = 1.0f + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
  const F t = 3.0f - r1 * hfx;
  const F e0 = hxs * ((r1 - t) / (6.0f - r * t));
  return {hxs, e0, (r * (e0 - c) - c) - hxs};
}

// 2^k as a float, k clamped to the exponent's range.
template <class F>
VM_INLINE F expm1f_two_k(typename Lanes<F>::I k) {
  using L = Lanes<F>;
  using I = typename L::I;
  I kc = k < -126 ? I{} - 126 : k;
  kc = kc > 127 ? I{} + 127 : kc;
  return L::as_f((L::i_to_u(kc) << 23) + 0x3f800000u);
}

// The reconstructions for k <= -2 or k >= 2 ('far' below -1 and above 56, 'mid' up to 22,
// 'high' from 23), selected by k.
template <class F>
VM_INLINE F expm1f_reconstruct_wide(F r, F e, typename Lanes<F>::I k) {
  using L = Lanes<F>;
  using I = typename L::I;
  using U = typename L::U;
  const F two_k = expm1f_two_k<F>(k);
  const I k_small = (k > 0 && k < 23) ? k : I{} + 1;  // keeps the shifts defined in unused lanes
  const I k_large = (k >= 23 && k <= 56) ? k : I{} + 23;
  const F one_minus_2mk = L::as_f(0x3f800000u - ((U{} + 0x1000000u) >> L::i_to_u(k_small)));  // 1 - 2^-k
  const F two_mk = L::as_f(L::i_to_u(0x7f - k_large) << 23);                               // 2^-k
  const F far = (1.0f - (e - r)) * two_k - 1.0f;     // k <= -2 or k > 56
  const F mid = (one_minus_2mk - (e - r)) * two_k;   // 2 <= k < 23
  const F high = ((r - (e + two_mk)) + 1.0f) * two_k;  // 23 <= k <= 56
  const F y = k < 23 ? mid : high;
  return (k <= -2 || k > 56) ? far : y;
}

template <class F>
VM_INLINE F expm1f_fdlibm(F x) {
  using L = Lanes<F>;
  using I = typename L::I;
  using U = typename L::U;
  const U bits = L::as_u(x);
  const U hx = bits & 0x7fffffffu;
  const auto negative = (bits >> 31) != 0u;
  // |x| in (ln2/2, 3ln2/2): k = +-1 with the split of ln2 itself; beyond: k = round(x/ln2).
  const auto one_step = hx < 0x3F851592u;
  const I k_round = L::to_i(kExpm1InvLn2 * x + (negative ? F{} - 0.5f : F{} + 0.5f));
  const F tk = L::to_f(k_round);
  const F hi = one_step ? x - (negative ? F{} - kExpm1Ln2Hi : F{} + kExpm1Ln2Hi) : x - tk * kExpm1Ln2Hi;
  const F lo = one_step ? (negative ? F{} - kExpm1Ln2Lo : F{} + kExpm1Ln2Lo) : tk * kExpm1Ln2Lo;
  const F reduced = hi - lo;
  const auto reduce = hx > 0x3eb17218u;  // |x| > ln2/2
  I k = one_step ? (negative ? I{} - 1 : I{} + 1) : k_round;
  k = reduce ? k : I{};
  const F r = reduce ? reduced : x;
  const F c = reduce ? (hi - reduced) - lo : F{};
  const Expm1Core<F> m = expm1f_core<F>(r, c);
  const F at_k0 = r - (r * m.e0 - m.hxs);
  const F at_km1 = 0.5f * (r - m.e) - 0.5f;
  const F at_k1 = r < -0.25f ? -2.0f * (m.e - (r + 0.5f)) : 1.0f + 2.0f * (r - m.e);
  // Lowest priority first: each later select overrides the earlier ones.
  F y = expm1f_reconstruct_wide<F>(r, m.e, k);
  y = k == 1 ? at_k1 : y;
  y = k == -1 ? at_km1 : y;
  y = k == 0 ? at_k0 : y;
  return hx < 0x33000000u ? x : y;  // |x| < 2^-25: x itself
}

// tanh's sign and special cases around z = tanh(|x|): tiny x (below 2^-55, where |x| may be
// that small) and infinities and NaN (where x may be one).
template <bool kTiny, bool kInfNan, class F>
VM_INLINE F tanhf_signed(F x, F z) {
  using L = Lanes<F>;
  using U = typename L::U;
  const U jx = L::as_u(x);
  const U ix = jx & 0x7fffffffu;
  const auto negative = (jx >> 31) != 0u;
  F y = negative ? -z : z;
  if constexpr (kTiny) y = ix < 0x24000000u ? x * (1.0f + x) : y;  // |x| < 2^-55, and +-0
  if constexpr (kInfNan) {
    y = ix >= 0x7f800000u ? (negative ? F{} - 1.0f : F{} + 1.0f) : y;  // +-inf
    y = ix > 0x7f800000u ? x + x : y;                                // NaN
  }
  return y;
}

// tanhf of fdlibm (glibc's s_tanhf): 1 - 2/(expm1(2|x|) + 2) for |x| >= 1,
// -t/(t + 2) with t = expm1(-2|x|) below, the sign put back; +-1 from |x| >= 22.
template <class F>
VM_INLINE F tanhf_fdlibm(F x) {
  using L = Lanes<F>;
  using U = typename L::U;
  const U ix = L::as_u(x) & 0x7fffffffu;
  const F ax = L::as_f(ix);
  const auto ge1 = ix >= 0x3f800000u;
  const F t = expm1f_fdlibm<F>(ge1 ? 2.0f * ax : -2.0f * ax);
  F z = ge1 ? 1.0f - 2.0f / (t + 2.0f) : -t / (t + 2.0f);
  z = ix >= 0x41b00000u ? F{} + 1.0f : z;
  return tanhf_signed<true, true, F>(x, z);
}

// tanhf_fdlibm for |x| < 1 only: -t/(t + 2) with t = expm1f(-2|x|). The argument of expm1 is
// then in (-2, 0], so its k is 0, -1, -2 or -3 and only three of expm1's six reconstructions
// can be chosen (k = 0, k = -1, and 'far' for k <= -2); tanh needs one division instead of two.
// Each remaining operation is the one tanhf_fdlibm runs for such a lane, in the same order
// (`x - (-c)` is `x + c` exactly), so the bits are the same.
template <class F>
VM_INLINE F tanhf_fdlibm_below_one(F x) {
  using L = Lanes<F>;
  using I = typename L::I;
  using U = typename L::U;
  // expm1f(m), m = -2|x| in (-2, 0]: always negative (-0 for x = +-0)
  const F m = -2.0f * L::as_f(L::as_u(x) & 0x7fffffffu);
  const U hm = L::as_u(m) & 0x7fffffffu;
  const auto one_step = hm < 0x3F851592u;
  const I k_round = L::to_i(kExpm1InvLn2 * m + (F{} - 0.5f));
  const F tk = L::to_f(k_round);
  const F hi = one_step ? m - (F{} - kExpm1Ln2Hi) : m - tk * kExpm1Ln2Hi;
  const F lo = one_step ? F{} - kExpm1Ln2Lo : tk * kExpm1Ln2Lo;
  const F reduced = hi - lo;
  const auto reduce = hm > 0x3eb17218u;
  I k = one_step ? I{} - 1 : k_round;
  k = reduce ? k : I{};
  const F r = reduce ? reduced : m;
  const F c = reduce ? (hi - reduced) - lo : F{};
  const Expm1Core<F> p = expm1f_core<F>(r, c);
  const F at_k0 = r - (r * p.e0 - p.hxs);
  const F at_km1 = 0.5f * (r - p.e) - 0.5f;
  const F two_k = L::as_f((L::i_to_u(k) << 23) + 0x3f800000u);  // k >= -3: expm1f_two_k's clamp does nothing
  const F far = (1.0f - (p.e - r)) * two_k - 1.0f;
  F t = k == 0 ? at_k0 : (k == -1 ? at_km1 : far);
  t = hm < 0x33000000u ? m : t;  // |m| < 2^-25: m itself
  return tanhf_signed<true, false, F>(x, -t / (t + 2.0f));
}

// tanhf_fdlibm for |x| >= 1 (inf and NaN included): 1 - 2/(t + 2) with t = expm1f(2|x|). The
// argument of expm1 is then at least 2, so its k is at least 3 (or garbage past 2^31, where
// tanh is +-1 anyway) and only 'mid', 'high' and 'far' can be chosen; one division instead of
// two. As in tanhf_fdlibm_below_one, each remaining operation is tanhf_fdlibm's for such a lane.
template <class F>
VM_INLINE F tanhf_fdlibm_from_one(F x) {
  using L = Lanes<F>;
  using I = typename L::I;
  using U = typename L::U;
  const U ix = L::as_u(x) & 0x7fffffffu;
  // expm1f(m), m = 2|x| >= 2: positive, past one_step's range, always reduced
  const F m = 2.0f * L::as_f(ix);
  const I k = L::to_i(kExpm1InvLn2 * m + (F{} + 0.5f));
  const F tk = L::to_f(k);
  const F hi = m - tk * kExpm1Ln2Hi;
  const F lo = tk * kExpm1Ln2Lo;
  const F r = hi - lo;
  const Expm1Core<F> p = expm1f_core<F>(r, (hi - r) - lo);
  const F t = expm1f_reconstruct_wide<F>(r, p.e, k);
  F z = 1.0f - 2.0f / (t + 2.0f);
  z = ix >= 0x41b00000u ? F{} + 1.0f : z;
  return tanhf_signed<false, true, F>(x, z);
}

// tanhf_fdlibm in one of its forms: 0 the full one, 1 below one, 2 from one.
template <int kForm, class F>
VM_INLINE F tanhf_form(F x) {
  if constexpr (kForm == 1) return tanhf_fdlibm_below_one<F>(x);
  else if constexpr (kForm == 2) return tanhf_fdlibm_from_one<F>(x);
  else return tanhf_fdlibm<F>(x);
}

// d[j] = tanhf(a[j]) in form kForm, a vector V at a time, then the tail one by one.
template <int kForm, class V>
VM_INLINE void tanhf_form_loop(float* __restrict d, const float* __restrict a, int64_t n) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    V x;
    std::memcpy(&x, a + j, sizeof x);
    const V y = tanhf_form<kForm, V>(x);
    std::memcpy(d + j, &y, sizeof y);
  }
  for (; j < n; ++j) d[j] = tanhf_form<kForm, float>(a[j]);
}

// d[j] = tanhf(a[j]) a vector V (F8, or F16 in vmath_avx512.cc) at a time. Every lane runs the
// same float operations whatever the width, so the width changes no bit. A block (a kernel's
// tile) whose inputs are all below 1 in magnitude (W2's, say) takes tanhf_fdlibm_below_one, one
// whose inputs are all at least 1 tanhf_fdlibm_from_one: the same bits for less work; a mixed
// block the full form. Everything here is
// always_inline: a vector must never cross a call between code built for different ISAs.
template <class V>
VM_INLINE void tanhf_fdlibm_loop(float* __restrict d, const float* __restrict a, int64_t n) {
  // The range of |x|'s bits: the first 16 inputs, then (unless those already mix magnitudes
  // below and above 1, as most inputs of a mixed block do) all of them, in a loop that
  // vectorizes (unsigned min and max).
  uint32_t lo = 0xffffffffu, hi = 0;
  auto range = [&](int64_t from, int64_t to) __attribute__((always_inline)) {
    for (int64_t i = from; i < to; ++i) {
      uint32_t u;
      std::memcpy(&u, a + i, sizeof u);
      u &= 0x7fffffffu;
      lo = u < lo ? u : lo;
      hi = u > hi ? u : hi;
    }
  };
  const int64_t head = n < 16 ? n : 16;
  range(0, head);
  if (!(lo < 0x3f800000u && hi >= 0x3f800000u)) range(head, n);
  if (hi < 0x3f800000u) tanhf_form_loop<1, V>(d, a, n);
  else if (lo >= 0x3f800000u) tanhf_form_loop<2, V>(d, a, n);
  else tanhf_form_loop<0, V>(d, a, n);
}

// expf of glibc 2.27+ (from Arm's optimized-routines): x/ln2 = (k + r)/32 with a 32-entry
// table of 2^(i/32) and a cubic in r, all in double, rounded once to float. glibc runs a
// build of it with fused multiply-adds on CPUs that have them and one without elsewhere:
// kFused picks which (their results differ on 2 of the 2^32 inputs).
struct Exp2Table {
  uint64_t bits[32];  // 2^(i/32) as a double, minus i << 47 (the index's part of the exponent)
};
const Exp2Table& exp2_table();  // built once, in libm_check.cc

template <bool kFused>
VM_INLINE float expf_glibc(float x, const uint64_t* table) {
  const double kInvLn2N = 0x1.71547652b82fep+0 * 32, kShift = 0x1.8p+52;
  const double C0 = 0x1.c6af84b912394p-5 / (32.0 * 32 * 32), C1 = 0x1.ebfce50fac4f3p-3 / (32.0 * 32),
               C2 = 0x1.62e42ff0c52d6p-1 / 32;
  const double xd = x;
  double kd = kFused ? __builtin_fma(kInvLn2N, xd, kShift) : kInvLn2N * xd + kShift;
  const uint64_t ki = bits_of(kd);
  kd -= kShift;
  const double r = kFused ? __builtin_fma(kInvLn2N, xd, -kd) : kInvLn2N * xd - kd;
  const double s = double_of(table[ki % 32] + (ki << 47));
  const double r2 = r * r;
  double z, y;
  if (kFused) {
    z = __builtin_fma(C0, r, C1);
    y = __builtin_fma(C2, r, 1.0);
    y = __builtin_fma(z, r2, y);
  } else {
    z = C0 * r + C1;
    y = C2 * r + 1.0;
    y = z * r2 + y;
  }
  float result = static_cast<float>(y * s);
  // |x| >= 88 or NaN: glibc's special cases (overflow to inf, underflow to 0, NaN, -inf -> 0).
  const float kInf = __builtin_inff();
  result = x > 0x1.62e42ep6f ? kInf : result;
  result = x < -0x1.9fe368p6f ? 0.0f : result;
  result = x != x ? x + x : result;
  return result;
}

#undef VM_INLINE

}  // namespace vm
}  // namespace minpy_kernels
