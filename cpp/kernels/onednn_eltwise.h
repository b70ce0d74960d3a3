// oneDNN v2.4.4's float32 eltwise tanh and logistic (the kernels MXNet 1.9.1's wheel runs for
// Activation(act_type='tanh' / 'sigmoid')), forward and the backward MXNet runs, reproduced
// operation for operation as straight-line, branch-free code for one float and for GCC's
// vector-extension lanes (vm::F8, vm::F16 of vmath.h), so fused kernels can absorb these
// Activation nodes and still give eager MXNet's bits.
//
// What the wheel runs, and so what these functions reproduce (MXNet 1.9.1 from PyPI, its
// oneDNN v2.4.4, commit 5818c40f; include/mkldnn/oneapi/dnnl/dnnl_version.h of the wheel):
//
// 1. When Activation goes through oneDNN. Activation's FInferStorageType (MKLDNNStorageType)
//    picks FComputeEx on CPU for dense arrays unless MXNET_MKLDNN_ENABLED=0 (read once per
//    process); ActivationComputeExCPU then calls oneDNN iff SupportMKLDNNAct(param, input):
//    act_type relu, sigmoid, softrelu or tanh, dtype float32, and ndim within the supported
//    range; otherwise FallBackCompute runs mshadow's kernels (glibc-equal tanhf, 1/(1+expf(-x))).
//    In the stored sources the backward (_backward_Activation, inputs: head gradient, output,
//    input) applies the same test to inputs[0], the head gradient (same shape and dtype as x).
//    Those stored src/operator/nn/mkldnn/mkldnn_act.cc / activation.cc versions (apache/mxnet,
//    read with the search tools; none of them is 1.9.x) say ndim 1..4; the 1.9.1 wheel also
//    takes 5-D, as observed here. Observed with DNNL_VERBOSE=1,
//    forward and backward under autograd: float32 1-D (7), 2-D (3x5), 3-D, 4-D, 5-D (2x3x4x5x2)
//    -> "eltwise,jit:avx512_common,forward_training ... alg:eltwise_tanh" (or eltwise_logistic)
//    and "backward_data ... alg:eltwise_tanh"; 6-D, 0-D (npx.activation on a numpy scalar),
//    float16 and float64 -> no oneDNN call (mshadow); no-record forward and Gluon's hybridized
//    nn.Activation -> forward_inference, same kernel; MXNET_MKLDNN_ENABLED=0 -> "Storage type
//    fallback" (mshadow). (bfloat16 NDArrays cannot be made from Python in this wheel.)
//    mx.nd.tanh / mx.nd.sigmoid (the unary ops) never call oneDNN.
// 2. Backward: algorithm eltwise_tanh / eltwise_logistic (not *_use_dst_for_bwd), and the tensor
//    handed to oneDNN is Activation's INPUT x: autograd's gradient at x = 2 is 0.07065082 =
//    1 - tanh(2)^2 (from y it would be 0.4434), for sigmoid 0.10499357 (from y: 0.2072). The
//    kernel recomputes the forward from x, then: tanh d = 1 - t*t in ONE fused op
//    (vfnmadd231ps d=1, t, t), logistic d = s * (1 - s) (vsubps, then vmulps, each rounded),
//    and dx = d * dy (vmulps, d the first operand: with two NaNs d's comes out). Calling
//    _backward_Activation directly equals autograd's gradient bit for bit (4M inputs, both).
// 3. The forward algorithms, read from the kernels the wheel generated (DNNL_JIT_DUMP=1, then
//    objdump; they match jit_uni_eltwise_injector.cpp of oneDNN 2.x):
//    tanh: |x| = x & 0x7fffffff; polynomial index i = ((bits(|x|) - bits(2^-12)) & 0xffc00000)
//      >> 22, one per half binade; s = |x| - (|x| with the mantissa below its first bit
//      cleared), exact; p = degree-6 polynomial in s, Horner, six vfmadd213ps, coefficients
//      from a 7x32 table (kTanhPoly; the avx512 kernel looks them up with vpermt2ps, the avx2
//      one with vgatherdps, reading past the table for |x| < 2^-12, |x| >= 12 or NaN, lanes
//      whose p is always discarded). Then y = 1, replaced by p where !(9.0109 <= |x|), then by
//      |x| where !(0x1.bb67aep-12 <= |x|) (vcmpnleps: true for NaN), and the sign of x xored
//      back. So: |x| < 0x1.bb67aep-12 (+-0, denormals) -> x exactly; |x| >= 0x41102cb3 (9.0109)
//      and +-inf -> +-1; NaN -> x's own bits (even a signalling NaN: only logic ops touch it).
//    logistic: v = x | sign (= -|x|); e = exp(v); s = e / (e + 1) (vaddps, vdivps); result s
//      where x's sign bit is set (-0 and negative NaNs included; vblendvps on the sign / avx512
//      vptestmd), else 1 - s (vsubps).
//    exp (oneDNN's): underflow = v < -87.3365479 (vcmpltps); v = min(v, 88.7228394) then
//      max(v, -87.3365479) with minps/maxps semantics (NaN -> 88.7228394); fx = v*log2(e) + 0.5
//      as vmulps then vaddps (NOT fused); n = floor(fx) (vroundps / vrndscaleps imm 1);
//      r = v - n*ln2 (vfnmadd231ps, fused); 2^(n-1) = ((int)(n - 1) + 127) << 23, replaced by
//      0 where underflow; p = degree-5 polynomial in r (coefficients 0.999999701, 0.499991506,
//      0.166676521, 0.0418978221, 0.00828929059, then 1; five vfmadd213ps); exp = (p*2^(n-1))*2.
//      So sigmoid(-inf) = 0, sigmoid(+inf) = 1, sigmoid(+-0) = 0.5, sigmoid(denormal) = 0.5,
//      sigmoid(x) = 0 for x <= -87.3365479 (2^(n-1) is 0); sigmoid(NaN) = 0xffc00000
//      for every NaN (exp(NaN) runs as exp(88.72...) = inf, inf/inf is the default NaN).
//    No flush to zero: with the denormal head gradients of the exhaustive check the wheel's
//    results are the IEEE ones (denormal products included), as these functions compute.
// 4. AVX2 vs AVX-512: oneDNN's avx2 and avx512_common kernels (DNNL_MAX_CPU_ISA=AVX2 gives
//    "jit:avx2"; AVX512_CORE and the default give "jit:avx512_common" on this CPU) run the same
//    floating-point operations in the same order with the same constants and tables (the dumps
//    differ only in masks: vblendvps vs k-registers, vgatherdps vs vpermt2ps, vroundps vs
//    vrndscaleps), and both tails run the vector code on one element at a time (vmovss in,
//    vmovss out), so every element's bits are independent of the array size and position.
//    (The AVX2-only CI machines run those avx2 kernels.)
//
// Checked (cpp/kernels/dev/onednn_eltwise_check.cc, against MXNet's Activation and
// _backward_Activation through the C API, bits compared exactly, NaN payloads included):
// every one of the 2^32 float32 inputs forward, and backward every x times each of 19 head
// gradients (1, -1, 0.5, 3.7, +0, -0, +inf, -inf, 0x7fc00000, 0xffc00000, signalling NaN
// 0x7fa12345, denormals 0x00000001, 0x807fffff, 0x00400000, FLT_MAX, 0.111148, -97.8587,
// 1.284e-10, 4.98e18), then 2^26 random bit-pattern (x, dy) pairs, 2^26 pairs x in [-12, 12],
// dy normal, and arrays of 1 to 100003 elements shaped 1-D to 5-D: 0 mismatches, for tanh and
// sigmoid, forward and backward, in each form (one float, F8 built -mavx2 -mfma, F16 built
// -mavx512f, one float built for baseline x86-64 where fmaf is libm's [backward with 6 of the
// head gradients: 1, 3.7, +0, +inf, 0x7fc00000, 0x00000001], F8 built with -ffp-contract=fast),
// against oneDNN's avx512_common kernels (this CPU's default) and against its avx2 kernels
// (DNNL_MAX_CPU_ISA=AVX2). (All 2^32 inputs: 2115 s with the avx512 kernels, 2463 s with the
// avx2 ones. The sample also with OMP_NUM_THREADS=2, where MXNet splits arrays between
// threads: 0 mismatches.)
//
// Where a fused kernel may use these instead of eager's Activation and still give its bits:
//   - Activation with act_type 'tanh' or 'sigmoid' (onednn_tanh_fwd / onednn_logistic_fwd), its
//     input float32 with 1 <= ndim <= 5 (any size, any shape, dense, CPU), and for the gradient
//     _backward_Activation of such a node: onednn_tanh_bwd / onednn_logistic_bwd(x = the
//     node's INPUT, dy = the head gradient);
//   - MXNet's oneDNN kernels are the avx2 or avx512 ones: the CPU has AVX2 and FMA (every
//     AVX-512 CPU has), MXNET_MKLDNN_ENABLED is not 0, and DNNL_MAX_CPU_ISA is unset or allows
//     AVX2 (AVX2, AVX512_*, ALL). Below that (a CPU without AVX2, DNNL_MAX_CPU_ISA=AVX or SSE41)
//     oneDNN's kernels emulate each fused multiply-add with a multiply and an add, and
//     their bits differ from these (DNNL_MAX_CPU_ISA=AVX runs jit:avx, SSE41 jit:sse41; on the
//     2^27 sampled inputs both differ from these on 1040993 tanh and 8587822 sigmoid forwards).
//   - Everything else runs mshadow in eager (float16, float64, 0-D, 6-D and more,
//     MXNET_MKLDNN_ENABLED=0): glibc's functions, which vmath.h reproduces; mx.nd.tanh and
//     mx.nd.sigmoid are always those. (softrelu also goes to oneDNN and is not reproduced here.)
//
// Building: the fused multiply-adds need FMA in the target to be fast: -mfma / -mavx512f, or a
// target_clones entry such as "arch=haswell". target_clones' plain "avx2" clone has no FMA: it
// still gives the same bits (__builtin_fmaf becomes libm's fmaf, exact) but far slower. The
// results do not depend on -ffp-contract (products oneDNN rounds on their own go through
// keep(); checked with -ffp-contract=fast. Without keep(), -ffp-contract=fast made GCC 12 fuse
// 6 more multiply-adds into the F8 code, which changed no bits on the 2^27-input sample: keep()
// is a guarantee, not a fix of an observed difference). NaN results assume x86's default NaN
// (0xffc00000) for inf/inf and inf*0, as the wheel's kernels give.
//
// Speed, ns per element over 1M floats uniform in [-8, 8], one core of this (shared, busy)
// machine, best of 25 (cpp/kernels/dev/onednn_eltwise_check.cc time):
//                     F8 (-mavx2 -mfma)   F16 (-mavx512f)   MXNet Activation (avx512 / avx2 kernel)
//   tanh forward          0.73               0.14              0.23 / 1.72
//   sigmoid forward       0.45               0.26              0.22 / 0.38
// (oneDNN's avx2 tanh gathers its coefficients with vgatherdps, slow on this CPU; F8 here uses
// two-vector permutes instead: with _mm256_i32gather_ps it took 2.2 ns.) The one-float form is
// for tails: 1.4 (tanh) and 4.9-8.5 (sigmoid, whose selects GCC turns into branches there).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__) && (defined(__FMA__) || defined(__AVX512F__))
#include <immintrin.h>
#endif

#include "vmath.h"

namespace minpy_kernels {

#define VM_INLINE static inline __attribute__((always_inline))

namespace onednn_detail {

using vm::Lanes;

// The degree-6 polynomials of oneDNN's tanh, one per half binade of |x| from 2^-12 to 12
// (entry i covers [2^-12 * 1.5^(i&1) * 2^(i>>1), next entry's start)): coefficient d of
// polynomial i is kTanhPoly[d][i], as float bits. Entry 0 is the identity (|x| that small takes
// x itself anyway), entry 31 is all zeros (from 9.01 on the result is 1). Taken from the
// kernels oneDNN generated in this wheel (DNNL_JIT_DUMP=1, identical in the AVX2 and AVX-512
// kernels and in the forward and backward ones); they are the table of oneDNN's
// jit_uni_eltwise_injector.cpp.
alignas(64) inline constexpr uint32_t kTanhPoly[7][32] = {
    {  // degree 0 (the constant term)
        0x00000000u, 0x39bfffffu, 0x39ffffffu, 0x3a3ffffeu, 0x3a7ffffbu, 0x3abffff7u, 0x3affffebu, 0x3b3fffdcu,
        0x3b7fffabu, 0x3bbfff70u, 0x3bfffeabu, 0x3c3ffdc0u, 0x3c7ffaabu, 0x3cbff701u, 0x3cffeaadu, 0x3d3fdc08u,
        0x3d7faacdu, 0x3dbf7081u, 0x3dfeacc9u, 0x3e3dc7fdu, 0x3e7acbf5u, 0x3eb77a9fu, 0x3eec9a9fu, 0x3f22991fu,
        0x3f42f7d6u, 0x3f67b7ccu, 0x3f76ca83u, 0x3f7ebbe9u, 0x3f7fd40cu, 0x3f7fff32u, 0x3f7ffffcu, 0x3f800000u,
    },
    {  // degree 1
        0x3f800000u, 0x3f800018u, 0x3f7fffe8u, 0x3f7fffdau, 0x3f7fffdcu, 0x3f7fffdcu, 0x3f7fffacu, 0x3f7fff70u,
        0x3f7ffeecu, 0x3f7ffdc0u, 0x3f7ffbedu, 0x3f7ff704u, 0x3f7feff5u, 0x3f7fdbcau, 0x3f7fbfffu, 0x3f7f7041u,
        0x3f7f009bu, 0x3f7dc36cu, 0x3f7c0aa8u, 0x3f7734b8u, 0x3f70a4deu, 0x3f5f1fd8u, 0x3f495493u, 0x3f18b9ecu,
        0x3ed706cbu, 0x3e390b06u, 0x3d90b11fu, 0x3c21a053u, 0x3aaf7fdbu, 0x37ccc1a3u, 0x355c6733u, 0x00000000u,
    },
    {  // degree 2
        0x00000000u, 0xbe4e0ff1u, 0x3d25b1b1u, 0x3d6b6dabu, 0x3c9fb1d5u, 0xbabff06fu, 0x3c07b3f6u, 0xbb3fc1bcu,
        0x3a9f5921u, 0xbbbf06f2u, 0xbbb0f402u, 0xbc47db9eu, 0xbc73d5e7u, 0xbca25bdau, 0xbcfca780u, 0xbd40e07cu,
        0xbd7dab03u, 0xbdbe4a0fu, 0xbdfb14a5u, 0xbe36cc8du, 0xbe6bd102u, 0xbe9fe7c5u, 0xbeba0f10u, 0xbec206a8u,
        0xbea3c388u, 0xbe277d62u, 0xbd8b7960u, 0xbc209f49u, 0xbaad44cau, 0xb7c6eeacu, 0xb663aa41u, 0x00000000u,
    },
    {  // degree 3
        0x00000000u, 0x45b3ae96u, 0xc414eb20u, 0xc450e02eu, 0xc3152b4eu, 0xbead2f56u, 0xc2162e02u, 0xbeb4bd5au,
        0xc11a59a4u, 0xbed2f507u, 0xc020d32cu, 0x3dd0f506u, 0xbf2a75e2u, 0xbff950e3u, 0xbed47334u, 0xbe809b8cu,
        0xbeb64532u, 0xbe961a5bu, 0xbe9b63acu, 0xbea0d4b2u, 0xbe828a77u, 0xbe378612u, 0xbdc20908u, 0x3d2d3957u,
        0x3dd46e89u, 0x3db3f629u, 0x3d2c5e7bu, 0x3bd20403u, 0x3a59dfaeu, 0x3770af45u, 0x372cc014u, 0x00000000u,
    },
    {  // degree 4
        0x00000000u, 0xcc981a1bu, 0x4a7edd3du, 0x4ab1007cu, 0x48fedd9cu, 0x41a557b5u, 0x477ee32au, 0x422557f5u,
        0x45ff3ce4u, 0x42a55641u, 0x446e0867u, 0xc33dc19au, 0x42915214u, 0x43af4fadu, 0x4110fe88u, 0xc1099b75u,
        0x3fc8a8dcu, 0xbfbeaef5u, 0xbe365aadu, 0x3f4d9652u, 0x3ddfa08fu, 0x3e34e9b8u, 0x3e2d07a6u, 0x3dc63567u,
        0x3cdaeb78u, 0xbcd17537u, 0xbc92829cu, 0xbb43ab99u, 0xb9b471ddu, 0xb6baad5au, 0xb78bafc7u, 0x00000000u,
    },
    {  // degree 5
        0x00000000u, 0x52f688d5u, 0xd0505c72u, 0xd08f98e3u, 0xce505cc9u, 0xc7162b8au, 0xcc5061d6u, 0xc7162bdfu,
        0xca50b37fu, 0xc7162a3au, 0xc8422086u, 0x471a714eu, 0xc5ece1f1u, 0xc70e3d90u, 0xc3eba94au, 0x43e0c424u,
        0xc21f4552u, 0x42217cc8u, 0x405e7dc4u, 0xc10dd401u, 0x3e96b602u, 0xbd1a6d2fu, 0xbd393883u, 0xbd674682u,
        0xbd310016u, 0xb961e269u, 0x3ba32495u, 0x3a7680d5u, 0x38b3173cu, 0x35a9deeau, 0x375c3f2au, 0x00000000u,
    },
    {  // degree 6
        0x00000000u, 0xd8995ed1u, 0x558285eau, 0x55b2cd69u, 0x53028625u, 0x4bc9991fu, 0x5082898au, 0x4b4999b3u,
        0x4e02c07cu, 0x4ac99764u, 0x4b72c822u, 0xca40c0e1u, 0x489413e4u, 0x49b12224u, 0x46134c4eu, 0xc60c2d57u,
        0x43c83910u, 0xc3c872d1u, 0xc186bc9eu, 0x42325bc3u, 0xbf2ffa4au, 0x3d9a203cu, 0xbc545a43u, 0xbae08feeu,
        0x3c80225du, 0x3b1fd1dfu, 0xba36b9d1u, 0xb91de544u, 0xb71f100fu, 0xb408e2edu, 0xb685fec8u, 0x00000000u,
    },
};

// Constants of the kernels (float bits).
constexpr uint32_t kTanhIdxBias = 0x39800000u;       // 2^-12: start of polynomial 0
constexpr uint32_t kTanhIdxMask = 0xffc00000u;       // sign, exponent and first mantissa bit
constexpr uint32_t kTanhLinearUbound = 0x39ddb3d7u;  // 0x1.bb67aep-12: below it tanh(x) = x
constexpr uint32_t kTanhSatLbound = 0x41102cb3u;     // 9.0109...: from it on tanh(x) = +-1
constexpr uint32_t kExpLnFltMax = 0x42b17218u;       // 88.7228394
constexpr uint32_t kExpLnFltMin = 0xc2aeac50u;       // -87.3365479
constexpr uint32_t kExpLog2e = 0x3fb8aa3bu;          // 1.44269502
constexpr uint32_t kExpLn2 = 0x3f317218u;            // 0.693147182
constexpr uint32_t kExpPoly[5] = {0x3f7ffffbu, 0x3efffee3u, 0x3e2aad40u, 0x3d2b9d0du, 0x3c07cfceu};  // p1..p5
constexpr uint32_t kOne = 0x3f800000u;

template <class F>
VM_INLINE F splat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  if constexpr (std::is_same_v<F, float>) return f;
  else return F{} + f;
}

// a*b + c rounded once, lane by lane (oneDNN's vfmadd*ps / vfnmadd*ps). With FMA in the
// target this is one vfmadd; without it, libm's fmaf (exact, much slower).
template <class F>
VM_INLINE F fma_lanes(F a, F b, F c) {
  if constexpr (std::is_same_v<F, float>) {
    return __builtin_fmaf(a, b, c);
  } else {
#if defined(__x86_64__) && (defined(__FMA__) || defined(__AVX512F__))
    if constexpr (sizeof(F) == 32) return (F)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#endif
#if defined(__x86_64__) && defined(__AVX512F__)
    if constexpr (sizeof(F) == 64) return (F)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#endif
    F r;
    for (unsigned i = 0; i < sizeof(F) / sizeof(float); ++i) r[i] = __builtin_fmaf(a[i], b[i], c[i]);
    return r;
  }
}

// v itself, opaque to the optimizer: a product passed through here is never contracted with
// the addition that follows into a fused multiply-add, whatever -ffp-contract says (oneDNN
// rounds those products on their own). Free in a register; where the type fits no register of
// the target (F8 without AVX, F16 without AVX-512) it goes through memory.
template <class F>
VM_INLINE F keep(F v) {
#if defined(__GNUC__) && defined(__SSE__)
  if constexpr (sizeof(F) <= 16) {
    __asm__("" : "+x"(v));
  } else if constexpr (sizeof(F) == 32) {
#if defined(__AVX__)
    __asm__("" : "+x"(v));
#else
    __asm__("" : "+m"(v));
#endif
  } else {
#if defined(__AVX512F__)
    __asm__("" : "+v"(v));
#else
    __asm__("" : "+m"(v));
#endif
  }
#elif defined(__GNUC__)
  __asm__("" : "+m"(v));
#endif
  return v;
}

// kTanhPoly[deg][idx & 31] in every lane. (idx & 31 is what AVX-512's vpermt2ps does; the AVX2
// kernel's gather reads past the table for indices above 31, but those lanes' polynomial is
// always discarded: see onednn_tanh_fwd.)
template <class F>
VM_INLINE F tanh_coeff(int deg, typename Lanes<F>::U idx) {
  using L = Lanes<F>;
  using U = typename L::U;
  const uint32_t* t = kTanhPoly[deg];
  if constexpr (std::is_same_v<F, float>) {
    return L::as_f(t[idx & 31u]);
  } else if constexpr (sizeof(F) == 32) {  // four 8-lane pieces, two two-vector permutes
    U t0, t1, t2, t3;
    std::memcpy(&t0, t, 32);
    std::memcpy(&t1, t + 8, 32);
    std::memcpy(&t2, t + 16, 32);
    std::memcpy(&t3, t + 24, 32);
    const U lo = __builtin_shuffle(t0, t1, idx & 15u);
    const U hi = __builtin_shuffle(t2, t3, idx & 15u);
    return L::as_f((idx & 16u) != 0u ? hi : lo);
  } else if constexpr (sizeof(F) == 64) {  // two 16-lane pieces: one vpermt2ps
    U t0, t1;
    std::memcpy(&t0, t, 64);
    std::memcpy(&t1, t + 16, 64);
    return L::as_f(__builtin_shuffle(t0, t1, idx & 31u));
  } else {
    U r;
    for (unsigned i = 0; i < sizeof(F) / sizeof(float); ++i) r[i] = t[idx[i] & 31u];
    return L::as_f(r);
  }
}

// floor(v) for |v| < 2^31, as vroundps/vrndscaleps toward -inf (exact; the one difference, the
// sign of a zero from -0, cannot occur: exp's argument v*log2(e) + 0.5 is never -0).
template <class F>
VM_INLINE F floor_small(F v) {
  using L = Lanes<F>;
  const F t = L::to_f(L::to_i(v));
  return t > v ? t - 1.0f : t;
}

}  // namespace onednn_detail

// ---- forward ------------------------------------------------------------------------------

// oneDNN's tanh: |x| split into its half binade (the polynomial's index) and the offset s from
// the half binade's start (exact), a degree-6 polynomial in s by Horner's rule with fused
// multiply-adds; then |x| below kTanhLinearUbound gives |x| and |x| from kTanhSatLbound gives
// 1; the sign of x put back by xor. NaN gives x's own bits, +-inf +-1, +-0 and denormals x.
template <class F>
VM_INLINE F onednn_tanh_fwd(F x) {
  using namespace onednn_detail;
  using L = Lanes<F>;
  using U = typename L::U;
  const U ux = L::as_u(x);
  const U uax = ux & 0x7fffffffu;
  const F ax = L::as_f(uax);
  const U idx = ((uax - kTanhIdxBias) & kTanhIdxMask) >> 22;
  const F s = ax - L::as_f(uax & kTanhIdxMask);
  F p = tanh_coeff<F>(6, idx);
  p = fma_lanes<F>(p, s, tanh_coeff<F>(5, idx));
  p = fma_lanes<F>(p, s, tanh_coeff<F>(4, idx));
  p = fma_lanes<F>(p, s, tanh_coeff<F>(3, idx));
  p = fma_lanes<F>(p, s, tanh_coeff<F>(2, idx));
  p = fma_lanes<F>(p, s, tanh_coeff<F>(1, idx));
  p = fma_lanes<F>(p, s, tanh_coeff<F>(0, idx));
  // oneDNN's masks are vcmpnleps, !(bound <= |x|), true for NaN: NaN ends as |x|.
  F y = splat<F>(kTanhSatLbound) <= ax ? splat<F>(kOne) : p;
  y = splat<F>(kTanhLinearUbound) <= ax ? y : ax;
  return L::as_f(L::as_u(y) ^ (ux & 0x80000000u));
}

// oneDNN's exp as its logistic runs it: x clamped to [ln(FLT_MIN), ln(FLT_MAX)] with
// vminps/vmaxps semantics (NaN becomes ln(FLT_MAX)); n = floor(x*log2(e) + 0.5), product and
// sum rounded separately; r = x - n*ln2 in one fused multiply-add; 2^(n-1) built in the
// exponent bits, replaced by 0 where x < ln(FLT_MIN); a degree-5 polynomial in r by fused
// multiply-adds; then (poly * 2^(n-1)) * 2.
template <class F>
VM_INLINE F onednn_exp_fwd(F x) {
  using namespace onednn_detail;
  using L = Lanes<F>;
  const F lo = splat<F>(kExpLnFltMin), hi = splat<F>(kExpLnFltMax);
  const auto underflow = x < lo;  // vcmpltps: false for NaN
  F v = x < hi ? x : hi;           // vminps(x, hi)
  v = v > lo ? v : lo;             // vmaxps(v, lo)
  const F fx = keep<F>(v * splat<F>(kExpLog2e)) + 0.5f;
  const F n = floor_small<F>(fx);
  const F r = fma_lanes<F>(-n, splat<F>(kExpLn2), v);
  const auto e_bits = (L::i_to_u(L::to_i(n - 1.0f)) + 127u) << 23;  // n - 1 is an integer
  const F two_n1 = underflow ? F{} : L::as_f(e_bits);
  F p = splat<F>(kExpPoly[4]);
  p = fma_lanes<F>(p, r, splat<F>(kExpPoly[3]));
  p = fma_lanes<F>(p, r, splat<F>(kExpPoly[2]));
  p = fma_lanes<F>(p, r, splat<F>(kExpPoly[1]));
  p = fma_lanes<F>(p, r, splat<F>(kExpPoly[0]));
  p = fma_lanes<F>(p, r, splat<F>(kOne));
  return keep<F>(p * two_n1) * 2.0f;
}

// oneDNN's logistic: e = exp(-|x|), s = e / (e + 1); s where x's sign bit is set (-0 and
// negative NaNs included), 1 - s elsewhere. +-inf give 1 and 0; NaN gives the default NaN
// (0xffc00000 on x86): exp(NaN) is computed as exp(ln(FLT_MAX)) = inf, then inf / inf.
template <class F>
VM_INLINE F onednn_logistic_fwd(F x) {
  using namespace onednn_detail;
  using L = Lanes<F>;
  const auto ux = L::as_u(x);
  const F e = keep<F>(onednn_exp_fwd<F>(L::as_f(ux | 0x80000000u)));
  const F s = e / (e + 1.0f);
  const F t = 1.0f - s;
  return (ux & 0x80000000u) != 0u ? s : t;
}

// ---- backward -----------------------------------------------------------------------------
// MXNet hands oneDNN the Activation's INPUT x (algorithms eltwise_tanh / eltwise_logistic, not
// their *_use_dst_for_bwd forms) and the head gradient dy; the kernel recomputes the forward.

// Which NaN comes out where both factors of the final product are NaN (x and dy NaN) is fixed
// explicitly: x86 returns the first source operand's, oneDNN's derivative (vmulps d, d, dy), but
// a compiler may swap the operands of a commutative multiply (GCC does in scalar code), and may
// or may not fold the negation of -t*t into vfnmadd (which keeps a NaN's sign) or leave it to a
// sign flip. For a NaN x the kernel's derivative is x's NaN, quieted, its sign kept.
namespace onednn_detail {
template <class F>
VM_INLINE F product_d_first(F d, F dy) {
  return d != d ? d : d * dy;  // d NaN: d (already quiet); else a lone NaN dy comes out quieted
}
}  // namespace onednn_detail

// dx = (1 - t*t) * dy with t = onednn_tanh_fwd(x) and 1 - t*t one fused multiply-add
// (vfnmadd231ps).
template <class F>
VM_INLINE F onednn_tanh_bwd(F x, F dy) {
  using namespace onednn_detail;
  using L = Lanes<F>;
  const F t = onednn_tanh_fwd<F>(x);  // x's own bits where x is NaN
  F d = fma_lanes<F>(-t, t, splat<F>(kOne));
  d = t != t ? L::as_f(L::as_u(t) | 0x00400000u) : d;
  return product_d_first<F>(d, dy);
}

// dx = (s * (1 - s)) * dy with s = onednn_logistic_fwd(x), each operation rounded on its own.
template <class F>
VM_INLINE F onednn_logistic_bwd(F x, F dy) {
  using namespace onednn_detail;
  const F s = onednn_logistic_fwd<F>(x);
  const F d = s * (1.0f - s);
  return product_d_first<F>(d, dy);
}

// ---- loops --------------------------------------------------------------------------------
// A vector V (vm::F8, vm::F16) at a time, then the tail one float at a time. Every lane runs the
// same operations in the same order whatever the width, so a tail gives the body's bits (as in
// oneDNN's kernels, whose tail runs the vector code on one element). d may equal a (or x).
enum class OneDnnAlg { kTanh, kLogistic };

template <OneDnnAlg kAlg, class F>
VM_INLINE F onednn_fwd(F x) {
  if constexpr (kAlg == OneDnnAlg::kTanh) return onednn_tanh_fwd<F>(x);
  else return onednn_logistic_fwd<F>(x);
}
template <OneDnnAlg kAlg, class F>
VM_INLINE F onednn_bwd(F x, F dy) {
  if constexpr (kAlg == OneDnnAlg::kTanh) return onednn_tanh_bwd<F>(x, dy);
  else return onednn_logistic_bwd<F>(x, dy);
}

template <OneDnnAlg kAlg, class V>
VM_INLINE void onednn_fwd_loop(float* d, const float* a, int64_t n) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  int64_t j = 0;
  if constexpr (kLanes > 1) {
    for (; j + kLanes <= n; j += kLanes) {
      V x;
      std::memcpy(&x, a + j, sizeof x);
      const V y = onednn_fwd<kAlg, V>(x);
      std::memcpy(d + j, &y, sizeof y);
    }
  }
  for (; j < n; ++j) d[j] = onednn_fwd<kAlg, float>(a[j]);
}

template <OneDnnAlg kAlg, class V>
VM_INLINE void onednn_bwd_loop(float* d, const float* x, const float* dy, int64_t n) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  int64_t j = 0;
  if constexpr (kLanes > 1) {
    for (; j + kLanes <= n; j += kLanes) {
      V a, g;
      std::memcpy(&a, x + j, sizeof a);
      std::memcpy(&g, dy + j, sizeof g);
      const V r = onednn_bwd<kAlg, V>(a, g);
      std::memcpy(d + j, &r, sizeof r);
    }
  }
  for (; j < n; ++j) d[j] = onednn_bwd<kAlg, float>(x[j], dy[j]);
}

#undef VM_INLINE

}  // namespace minpy_kernels
