// MXNet 1.9.1's log_softmax (last axis, float32, CPU) forward and backward, bit for bit.
//
// Part of the kernel library since direct launches run a training step's loss without
// CachedOp (step_ops.cc); as a library op of its own inside a CachedOp (commit a1cacd8,
// reverted) it gained nothing: there a library op's call costs about 3 us more than MXNet's own
// (a chain of 50 log_softmax(64x10) * 1.0: 5.7 us a link with MXNet's operator, 8.6 with ours).
// The check of this reproduction is cpp/kernels/dev/onednn_softmax_check.{cc,py}; the runtime
// also checks it against MXNet's operator for each shape before a graph uses it
// (cpp/src/launch_check.cc).
//
// Why: a fused softmax-cross-entropy kernel must give eager's bits, and eager's log_softmax is
// not a libm formula. It is oneDNN 2.4.4's JIT softmax kernel, with its own polynomial exp and
// table-driven log, summed lane-wise across a vector register, so the result depends on the
// vector width oneDNN picked for this CPU. These functions redo that kernel's float operations
// in the same order, one lane at a time (rows are short, so scalar code is fine).
//
// ---- 1. When MXNet 1.9.1 runs oneDNN for log_softmax ---------------------------------------
// Source read: apache/mxnet src/operator/nn/mkldnn/mkldnn_log_softmax.cc (the 1.x MKLDNN file,
// stored commit 3aea428) and src/operator/nn/log_softmax.cc (stored commit 0980621).
// SupportMKLDNNLogSoftmax is true iff: no `temperature` is given (even temperature=1.0 falls
// back), input and output are float32, axis (after CheckAxis) is the last one, 1 <= ndim <= 4.
// Backward: the same test on (output, grad), and the grad op's storage-type function turns the
// oneDNN path off when the `dtype` parameter is set (softmax_has_dtype_override). log_softmax
// takes one input, so use_length=True does not run at all ("Check failed: in_attrs->size() ==
// softmax_use_length(attrs) ? 2U : 1U"). Empty inputs return early. MXNET_MKLDNN_ENABLED=0
// would bypass oneDNN (not tried).
// DNNL_VERBOSE=1 on this machine (AVX-512; /tmp scripts, mxnet 1.9.1 wheel):
//   64x10:        jit:avx512_common forward_training and backward_data, alg:logsoftmax axis:1
//   10, 2x3x10, 2x2x3x10, 2x4096, 2x100000: the same two lines (axis = last)
//   axis=0, temperature=2.0 or 1.0, float64, float16, 5-D, dtype='float64': no oneDNN line
//   not recording: forward_inference, same kernel. grad_req='add': backward_data, then a
//   oneDNN sum (simple:any) adds it to the old gradient (these functions give the addend).
//   Gluon's SoftmaxCrossEntropyLoss on (64, 10): the same forward_training + backward_data.
// With DNNL_MAX_CPU_ISA=AVX2: forward is jit:avx2, but backward is ref:any: v2.4 instantiates
// the JIT backward only for avx512_common (jit_uni_softmax.cpp: "template struct
// jit_uni_softmax_bwd_t<avx512_common>;" and no avx2 one), so an AVX2-only CPU runs the C++
// reference backward.
//
// ---- 2. The algorithm (oneDNN v2.4.4, commit 5818c40f, as built into the wheel) -------------
// Source of the kernel structure: jit_uni_softmax.cpp of a 2019-2021 oneDNN (cota/oneDNN fork,
// stored commit 0391427c; the v2.4 tag itself is not in the index). Ground truth: the code the
// wheel actually generates, dumped with DNNL_JIT_DUMP=1 (dnnl_dump_cpu_jit_softmax_t.*.bin,
// disassembled with objdump -b binary -mi386:x86-64) for 2x10, 64x10 and 2x100, both ISAs; every
// constant below was read from the dumped data tables. Per row (oneDNN parallelizes over rows
// only), W = 16 lanes (zmm) or 8 (ymm); element j of the row is lane j % W:
//  max:  vmax = -FLT_MAX in every lane; each full vector: vmax = vmaxps(vmax, x), i.e.
//        (vmax > x) ? vmax : x (a NaN in x replaces the lane, a NaN lane is forgotten by the
//        next element). Tail (n % W elements): AVX-512 masks the max ({k2}: unused lanes keep
//        their value); AVX2 blends -FLT_MAX into the unused lanes and takes the max with them,
//        so a NaN lane becomes -FLT_MAX there. Then a butterfly: v = op(v, v[lane ^ 8]) (vshuff32x4
//        0x4e, AVX-512 only), op(v, v[lane ^ 4]) (vshuff32x4 0xb1 / vperm2f128 1), op(v, v[lane ^ 2])
//        (vshufps 0x4e), op(v, v[lane ^ 1]) (vshufps 0xb1). With a NaN the lanes can disagree;
//        each lane keeps its own max, so this is simulated lane by lane.
//  d = x - vmax (per lane), stored to dst at once; vsum (+0 in each lane) += exp(d), one
//        accumulator for the whole row (the 4x unroll reuses the same register), a vector at a
//        time in order; tail: AVX-512 masked add, AVX2 adds a blended +0. Then the same
//        butterfly with vaddps. So the row sum is: per lane l, sequential over the vectors, then
//        pairwise (l, l^8), (.., ^4), (.., ^2), (.., ^1): the order depends on W.
//  exp(d) (eltwise injector; exp never returns NaN here):
//        under = d < ln(FLT_MIN) (-0x1.5d58a0p+6);  c = min(d, ln(FLT_MAX) 0x1.62e430p+6)
//        (vminps: NaN -> ln(FLT_MAX), so exp(NaN) = +inf); c = max(c, ln(FLT_MIN));
//        n = floor(c * log2e + 0.5) (vmulps, vaddps, vrndscaleps/vroundps imm 1);
//        r = c - n * ln2 in ONE fma (vfnmadd231ps); 2^(n-1) built as ((n-1) + 127) << 23, zeroed
//        where `under`; p = Horner in r with five FMAs (vfmadd213ps), coefficients
//        0x1.0f9f9cp-7, 0x1.573a1ap-5, 0x1.555a80p-3, 0x1.fffdc6p-2, 0x1.fffff6p-1, 1;
//        exp = (p * 2^(n-1)) * 2 (two vmulps: n = 128 would overflow the exponent field).
//  log(sum) (eltwise injector, table based, 32 entries; no polynomial-only path): i = the top
//        5 mantissa bits; b = i >> 4; e = float((bits >> 23) + b) (the BIASED exponent: the
//        table's second column carries -127 ln2); m = mantissa with exponent 127 - b (in
//        [0.75, 1.5)); z = A[i] * m - 1 (one fma, vfmsub213ps); q = z * Horner(z) with
//        coefficients 0x1.999146p-3, -0x1.000956p-2, 0x1.555556p-2, -0.5, 1 (FMAs, then vmulps);
//        h = e * ln2 + B[i] (one fma); s = q + h; res = s + ((s - h) - q); then x == 0 -> -inf,
//        x < 0 -> NaN 0x7fc00000. +inf and NaN are not special-cased (later oneDNN versions
//        added that). It is not exact: log(1) = -0x1.8p-20, so log_softmax of a one-element row
//        is 1.4305115e-06 in MXNet (checked: nd.log_softmax(nd.array([[5.0]])) -> 0x35c00000).
//  dst = d - log(sum): a separate pass, vsubps (lane l's log, all lanes equal).
// Backward (logsoftmax, dst = the forward's output y, diff_dst = head gradient dy):
//  AVX-512 (jit): sbr = +0 per lane, += dy a vector at a time (tail: zero-masked load, unmasked
//        add), butterfly add as above; then for each element: e = exp(y) with the same injector
//        exp, dx = dy - e * sbr in ONE fma (vfnmadd231ps zmm_dy, zmm_e, zmm_sbr).
//  AVX2 CPU (ref:any, C++ compiled by GCC 4.8.5 without FMA; disassembled under gdb at the
//        expf call in libmxnet.so): sbr = 0.f, then addss in element order; dx = dy - expf(y) *
//        sbr with a separate mulss and subss; expf is glibc's (libmxnet imports expf@GLIBC_2.2.5,
//        glibc's __expf_compat wrapper around the same expf) -- here ::expf, so this path is
//        MXNet's bits only where glibc's expf is the one linked (as vmath.h's checks assume).
//
// ---- 3. What MXNet does around it ----------------------------------------------------------
// The forward writes oneDNN's dst straight into the output (no post-processing). The backward
// op _backward_log_softmax gets (ograd, output): MKLDNNLogSoftmaxBackward passes in_data[1],
// the FORWARD'S OUTPUT y, as DNNL_ARG_DST and ograd as DNNL_ARG_DIFF_DST; oneDNN recomputes
// exp(y) (not the forward's exp). So backward(dy, y) must be given the y this forward produced.
// A tensor of any rank 1-4 is rows of its last dimension (dense, row-major).
//
// ---- Checked (cpp/kernels/dev/onednn_softmax_check.cc and .py) --------------------------
// Data recorded from MXNet by onednn_softmax_check.py, once with the default ISA (both directions
// jit:avx512_common, per DNNL_VERBOSE) and once with DNNL_MAX_CPU_ISA=AVX2 (jit:avx2 forward,
// ref:any backward); widths 16 and 8 respectively. Elements whose BITS differ (NaN patterns
// included), forward / backward (from MXNet's y) / chained (our y into our backward):
//   34 shapes, 5,700,960 elements per path: (64,10) (32,10) x300 trials, (128,100) x100,
//   (16,1000) x60, (8,c) for c = 1 2 3 5 7 8 9 13 15 16 17 24 31 32 33 47 63 64 65 100,
//   (4,127/129/255/257/1001), (8,4096) x20, (2,4099) x20, (2,100000) x3, (10,), (4,5,10);
//   rows uniform in [-30,30], [-3,3], [-200,200], wide magnitudes 2^[-149,128) with
//   subnormals, +-inf and NaNs (quiet and signalling, both signs, with payloads) inserted,
//   all-equal rows, near +-FLT_MAX, few-ulp (subnormal) differences, all -inf / -FLT_MAX
//   rows, one-hot logits; head gradients uniform, cross-entropy-like, wide, with inf/NaN,
//   +-0, constant, 1e4-scaled normal.
//     AVX-512 path, width 16: 0 / 0 / 0.   AVX2 path, width 8: 0 / 0 / 0.
//   Sweep (--sweep): rows [0, v1..v15], v = 8.8M negative floats from -0 to -inf (every 131st
//   bit pattern down to -104, every 4099th below), head gradient [1, 0..0] (so the AVX-512
//   backward returns -exp(y) exactly): 9,437,184 elements per path, 0 / 0 / 0 on both.
//   forward_inference equals forward_training in all of these. MXNet's outputs there include
//   NaN 0x7fc00000 and 0xffc00000, +-inf, and -0 gradients; y is never +-0 (see log(1)).
// The paths are NOT interchangeable. Modelling the AVX-512 data with width 8: 880 of 192,000
// forward and 40,303 backward elements differ at (64,10), 24,050 / 282,517 of 1,280,000 at
// (128,100), 32,466 / 128,808 of 655,360 at (8,4096); the sweep's backward 371,016. On plain
// uniform rows (an ad-hoc run of our two widths against each other, U(-3,3) and U(-30,30)):
// rows of 10 never differed in the forward (for rows up to 16 the 16-lane butterfly's first
// step adds lanes l and l+8 just as the 8-lane loop adds its second vector, so without NaNs
// the sums agree), rows of 100 / 1000 / 4096 differed in 12-27% of rows; the backward differed
// in 5-28% of elements at every length (injector exp + one FMA against glibc expf, mul, sub).
// The checks pass built with -O0, -O2 -mavx2 -mfma, -O3 -march=native (all -ffp-contract=off);
// -O3 -march=native WITHOUT -ffp-contract=off breaks them (1,389 forward elements differ on the
// AVX-512 data, 245,537 backward on the AVX2 data): GCC fuses c*log2e + 0.5 and dy - e*sbr.
// No length limit was found: rows up to 100,000 match. What is not reproduced: oneDNN's sse41
// kernel (CPUs without AVX2, or DNNL_MAX_CPU_ISA=AVX/SSE41), the fallbacks of section 1
// (MXNet's own kernel), and the AVX2 backward where the linked libm's expf is not glibc's.
//
// Must be compiled WITHOUT -ffast-math and with -ffp-contract=off (the project's flags): the
// unfused multiply-adds must stay unfused, and the comparisons rely on IEEE NaN semantics.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "onednn_eltwise.h"  // oneDNN's exp (onednn_exp_fwd)

namespace minpy_kernels {

// x86's addss/addps and mulss with NaN operands: the first NaN operand, made quiet. A commutative
// C++ `a + b` may be compiled with its operands swapped, so where two NaNs of different signs or
// payloads meet, the instruction the reproduced kernel runs is spelled out (here and in
// step_ops.cc).
inline float quiet_nan(float x) { return vm::Lanes<float>::as_f(vm::Lanes<float>::as_u(x) | 0x400000u); }
inline float add_x86(float a, float b) { return a != a ? quiet_nan(a) : (b != b ? quiet_nan(b) : a + b); }
inline float mul_x86(float a, float b) { return a != a ? quiet_nan(a) : (b != b ? quiet_nan(b) : a * b); }

// Compiled for AVX2 with FMA: the functions run only where oneDNN picked its AVX2 or AVX-512
// kernel (onednn_softmax_vector_width, outside this region, says 0 elsewhere), and the
// baseline x86-64 target has no fused multiply-add or rounding instruction, so __builtin_fmaf
// and std::floor became libm calls there (64 rows of 10: 20 us forward against 2 here).
// -ffp-contract=off still keeps every other multiply and add apart.
#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace onednn_softmax {

#define OS_INLINE static inline __attribute__((always_inline))

// Float bits and back (the kernel library's helpers).
OS_INLINE float f_of(uint32_t u) { return vm::Lanes<float>::as_f(u); }
OS_INLINE uint32_t u_of(float x) { return vm::Lanes<float>::as_u(x); }
// x86's maxps/minps: the second operand whenever the comparison is false (NaN, equal zeros).
OS_INLINE float max_x86(float a, float b) { return a > b ? a : b; }
// Additions where two NaNs can meet: add_x86 (above), in the order oneDNN's instructions name
// their operands.
OS_INLINE float min_x86(float a, float b) { return a < b ? a : b; }

constexpr float kNegFltMax = -0x1.fffffep+127f;

// oneDNN's exp (the eltwise injector's, as generated for both ISAs: same operations and
// constants, checked in both dumps): the kernel library's, which Activation's sigmoid runs too.
OS_INLINE float exp_jit(float x) { return onednn_exp_fwd<float>(x); }

// The log table, bit patterns read from the generated kernel's data: A[i] about 1/m for the
// mantissas m whose top five bits are i (a multiple of 1/32), B[i] = -log(A[i]) - 127 ln2
// (rounded), which absorbs the exponent bias left in e.
struct LogTable {
  uint32_t a[32], b[32];
};
OS_INLINE const LogTable& log_table() {
  static const LogTable t = {
      {0x3f800000u, 0x3f780000u, 0x3f700000u, 0x3f680000u, 0x3f600000u, 0x3f580000u, 0x3f580000u, 0x3f500000u,
       0x3f480000u, 0x3f480000u, 0x3f400000u, 0x3f400000u, 0x3f380000u, 0x3f380000u, 0x3f300000u, 0x3f300000u,
       0x3fa80000u, 0x3fa80000u, 0x3fa00000u, 0x3fa00000u, 0x3fa00000u, 0x3f980000u, 0x3f980000u, 0x3f900000u,
       0x3f900000u, 0x3f900000u, 0x3f900000u, 0x3f880000u, 0x3f880000u, 0x3f880000u, 0x3f800000u, 0x3f800000u},
      {0xc2b00f34u, 0xc2affef2u, 0xc2afee29u, 0xc2afdccdu, 0xc2afcad6u, 0xc2afb837u, 0xc2afb837u, 0xc2afa4e4u,
       0xc2af90cfu, 0xc2af90cfu, 0xc2af7be9u, 0xc2af7be9u, 0xc2af661eu, 0xc2af661eu, 0xc2af4f5cu, 0xc2af4f5cu,
       0xc2b09a6fu, 0xc2b09a6fu, 0xc2b08174u, 0xc2b08174u, 0xc2b08174u, 0xc2b06731u, 0xc2b06731u, 0xc2b04b82u,
       0xc2b04b82u, 0xc2b04b82u, 0xc2b04b82u, 0xc2b02e3eu, 0xc2b02e3eu, 0xc2b02e3eu, 0xc2b00f34u, 0xc2b00f34u}};
  return t;
}

// oneDNN's log (the injector's). Only ever called on a softmax sum, which is >= +0 and never
// NaN, but every input takes the same integer steps as in the kernel.
OS_INLINE float log_jit(float x) {
  const LogTable& t = log_table();
  const uint32_t u = u_of(x);
  const uint32_t i = (u >> 18) & 0x1fu;  // top five mantissa bits
  const uint32_t hi = i >> 4;            // mantissa >= 1.5: halve it, add one to the exponent
  const float e = static_cast<float>(static_cast<int32_t>((u >> 23) + hi));  // biased; sign bit included
  const float m = f_of((u & 0x7fffffu) | ((hi ^ 0x7fu) << 23));
  const float z = __builtin_fmaf(f_of(t.a[i]), m, -1.0f);
  float q = 0x1.999146p-3f;
  q = __builtin_fmaf(q, z, -0x1.000956p-2f);
  q = __builtin_fmaf(q, z, 0x1.555556p-2f);
  q = __builtin_fmaf(q, z, -0.5f);
  q = __builtin_fmaf(q, z, 1.0f);
  q = q * z;
  const float h = __builtin_fmaf(e, f_of(onednn_detail::kExpLn2), f_of(t.b[i]));  // ln 2
  const float s = q + h;
  const float c = (s - h) - q;
  float res = s + c;
  res = x == 0.0f ? -__builtin_inff() : res;
  res = x < 0.0f ? f_of(0x7fc00000u) : res;
  return res;
}

// The kernel's butterfly reduction across W lanes: v[l] = op(v[l], v[l ^ s]) for s = W/2 .. 1,
// each step reading the previous step's lanes.
template <int W, bool kMax>
OS_INLINE void butterfly(float* v) {
  for (int s = W / 2; s >= 1; s /= 2) {
    float t[W];
    for (int l = 0; l < W; ++l) t[l] = v[l ^ s];
    for (int l = 0; l < W; ++l) v[l] = kMax ? max_x86(v[l], t[l]) : add_x86(v[l], t[l]);  // vaddps v, v, t
  }
}

// One row, W lanes (16: jit:avx512_common, 8: jit:avx2). y may be x.
template <int W>
inline void forward_row(const float* x, float* y, int64_t n) {
  const int64_t full = n / W * W;
  const int tail = static_cast<int>(n - full);
  float vmax[W];
  for (int l = 0; l < W; ++l) vmax[l] = kNegFltMax;
  for (int64_t j = 0; j < full; j += W)
    for (int l = 0; l < W; ++l) vmax[l] = max_x86(vmax[l], x[j + l]);
  if (tail) {
    for (int l = 0; l < W; ++l) {
      if (l < tail) vmax[l] = max_x86(vmax[l], x[full + l]);
      else if (W == 8) vmax[l] = max_x86(vmax[l], kNegFltMax);  // AVX2 blends -FLT_MAX in; AVX-512 masks
    }
  }
  butterfly<W, true>(vmax);
  float vsum[W];
  for (int l = 0; l < W; ++l) vsum[l] = 0.0f;
  for (int64_t j = 0; j < n; j += W) {
    for (int l = 0; l < W; ++l) {
      if (j + l < n) {
        const float d = x[j + l] - vmax[l];
        y[j + l] = d;
        vsum[l] = add_x86(vsum[l], exp_jit(d));
      } else if (W == 8) {
        vsum[l] = vsum[l] + 0.0f;  // AVX2's blended zero (changes no value: the lane is never -0)
      }
    }
  }
  butterfly<W, false>(vsum);
  // After the butterfly every lane holds the row's sum unless a NaN made the lanes differ: then
  // one log serves them all (the same bits give the same log). Lanes past the row are unread.
  const int used = n < W ? static_cast<int>(n) : W;
  bool same = true;
  for (int l = 1; l < used; ++l) same = same && u_of(vsum[l]) == u_of(vsum[0]);
  float lg[W];
  if (same) {
    const float v = log_jit(vsum[0]);
    for (int l = 0; l < used; ++l) lg[l] = v;
  } else {
    for (int l = 0; l < used; ++l) lg[l] = log_jit(vsum[l]);
  }
  for (int64_t j = 0; j < n; ++j) y[j] = y[j] - lg[j % W];
}

// AVX-512 backward (jit): dx = dy - exp(y) * sum(dy), the sum lane-wise, one fused multiply-add.
inline void backward_row_avx512(const float* dy, const float* y, float* dx, int64_t n) {
  constexpr int W = 16;
  float sbr[W];
  for (int l = 0; l < W; ++l) sbr[l] = 0.0f;
  for (int64_t j = 0; j < n; j += W)
    for (int l = 0; l < W; ++l) sbr[l] = add_x86(sbr[l], j + l < n ? dy[j + l] : 0.0f);  // zero-masked tail load
  butterfly<W, false>(sbr);
  // oneDNN's vfnmadd231ps dy, e, sbr, as that instruction: which NaN operand it returns is the
  // instruction's choice (a compiled fmaf may take another form of the FMA).
  for (int64_t j = 0; j < n; ++j) {
    float d = dy[j];
    const float e = exp_jit(y[j]), s = sbr[j % W];
    __asm__("vfnmadd231ss %2, %1, %0" : "+x"(d) : "x"(e), "x"(s));
    dx[j] = d;
  }
}

// AVX2-only CPU backward (oneDNN's C++ reference): a plain sum in element order, libm's expf,
// and an unfused multiply then subtract.
inline void backward_row_ref(const float* dy, const float* y, float* dx, int64_t n) {
  float sbr = 0.0f;
  for (int64_t j = 0; j < n; ++j) sbr += dy[j];
  for (int64_t j = 0; j < n; ++j) {
    const float e = ::expf(y[j]);
    const float prod = e * sbr;
    dx[j] = dy[j] - prod;
  }
}

#undef OS_INLINE

}  // namespace onednn_softmax

// MXNet's log_softmax(x, axis=-1) on `rows` dense rows of `cols` floats. vector_width: 16 for
// a CPU with AVX-512F (oneDNN's avx512_common), 8 for an AVX2 CPU without it (or with
// DNNL_MAX_CPU_ISA=AVX2). Returns false, writing nothing, for any other width (oneDNN's sse41
// kernel is not reproduced). y may equal x.
inline bool log_softmax_rows_forward(const float* x, float* y, int64_t rows, int64_t cols, int vector_width) {
  if (vector_width != 16 && vector_width != 8) return false;
  for (int64_t r = 0; r < rows; ++r) {
    if (vector_width == 16) onednn_softmax::forward_row<16>(x + r * cols, y + r * cols, cols);
    else onednn_softmax::forward_row<8>(x + r * cols, y + r * cols, cols);
  }
  return true;
}

// MXNet's gradient of log_softmax(x, axis=-1): dx from the head gradient dy and the forward's
// OUTPUT y (what MXNet hands oneDNN). Widths as above (8: the reference backward oneDNN runs on
// an AVX2 CPU). dx may equal dy.
inline bool log_softmax_rows_backward(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols,
                                      int vector_width) {
  if (vector_width != 16 && vector_width != 8) return false;
  for (int64_t r = 0; r < rows; ++r) {
    if (vector_width == 16) onednn_softmax::backward_row_avx512(dy + r * cols, y + r * cols, dx + r * cols, cols);
    else onednn_softmax::backward_row_ref(dy + r * cols, y + r * cols, dx + r * cols, cols);
  }
  return true;
}

#pragma GCC pop_options

// The width oneDNN 2.4.4 in this wheel picks on this CPU: 16 with AVX-512F, 8 with AVX2, 0
// otherwise (its jit:sse41 kernel, not reproduced). DNNL_MAX_CPU_ISA=AVX2 or AVX2_VNNI caps it
// at 8, SSE41 or AVX gives 0 (observed with DNNL_VERBOSE); the wheel matches the value exactly
// (lower-case "avx2" is ignored, as are ONEDNN_MAX_CPU_ISA and MKLDNN_MAX_CPU_ISA).
inline int onednn_softmax_vector_width() {
  int w = __builtin_cpu_supports("avx512f") ? 16 : (__builtin_cpu_supports("avx2") ? 8 : 0);
  if (const char* isa = std::getenv("DNNL_MAX_CPU_ISA")) {
    const std::string s(isa);
    if (s == "SSE41" || s == "AVX") w = 0;
    else if ((s == "AVX2" || s == "AVX2_VNNI") && w > 8) w = 8;
  }
  return w;
}

// log_softmax_rows_forward / _backward with vector_width 16, a row's sixteen lanes in one
// register (onednn_softmax_avx512.cc): the same bits, several times faster. Only where
// onednn_softmax_vector_width() is 16 (the CPU has AVX-512F).
void log_softmax_rows_forward_avx512(const float* x, float* y, int64_t rows, int64_t cols);
void log_softmax_rows_backward_avx512(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols);

}  // namespace minpy_kernels
