// The per-element arithmetic of MXNet 1.9.1's optimizer updates, one struct per
// rule, written operation by operation in MXNet's float order so that the
// multi-tensor kernels (multi_update.cc) are bit-identical to the per-weight
// MXNet ops the runtime replaces (src/operator/optimizer_op-inl.h):
//
//   sgd        SGDKernel / MP_SGDKernel (per-weight formula) or MultiSGDKernel
//   sgd_mom    SGDMomKernel, MP_SGDMomKernel, MultiSGDKernel with momentum
//   nag_mom    NAGMomKernel, MP_NAGMomKernel
//   adam       AdamUpdateKernel
//   rmsprop    RMSPropUpdateKernel
//   rmspropalex RMSPropAlexUpdateKernel
//   adagrad    the dense path of mxnet.optimizer.AdaGrad.update, which is not one
//              op but eleven (`grad * rescale`, clip, square, `history +=`,
//              `history + eps`, sqrt, div, `weight * wd`, add, `* -lr`,
//              `weight +=`), each rounding to float32
//
// Compiled without FP contraction (no fused multiply-add) and without
// -ffast-math, as MXNet's own kernels are in the wheel.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace minpy_kernels {

// mshadow_op::clip: x beyond +-bound becomes +-bound; NaN passes through.
static inline float clip_bound(float x, float bound) { return x > bound ? bound : (x < -bound ? -bound : x); }

// The `clip` operator's form (a_min, a_max given separately).
static inline float clip_range(float x, float lo, float hi) { return x > hi ? hi : (x < lo ? lo : x); }

// IEEE half <-> float, round to nearest even: what mshadow's half_t conversions give
// on this wheel (checked against MXNet's Cast in tests/test_optimizers.py).
static inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal half: normalise
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while (!(man & 0x400u));
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u | ((x >> 13) & 0x3ffu) : 0x7c00u);
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // rounds to beyond the largest half: inf
  if (x >= 0x38800000u) {  // normal half
    const uint32_t mant = x & 0x7fffffu;
    uint32_t h = ((x >> 23) - 112) << 10 | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
    return sign | static_cast<uint16_t>(h);
  }
  if (x < 0x33000000u) return sign;  // below half the smallest subnormal: zero
  // subnormal half: shift the full significand, round to nearest even
  const uint32_t e = x >> 23, mant = (x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  uint32_t h = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

// Hyper-parameters shared by all weights of one call (per-weight lr and wd come apart).
struct Hyper {
  float rescale = 1.f, clip = -1.f;  // clip < 0: off (AdaGrad: clip_lo/hi instead)
  float momentum = 0.f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  float gamma1 = 0.95f, gamma2 = 0.9f, clip_weights = -1.f;
  float clip_lo = 0.f, clip_hi = 0.f;  // AdaGrad's clip(grad, -c, c), both parsed as MXNet does
};

// Each rule: `step(w, g, s0, s1, s2, lr, wd, h, in_place) -> new weight`, updating its
// kStates states through the references (the others are scratch). `w` is the weight (the float32 master copy for mixed
// precision); `in_place` says the new weight is written over the weight the op reads.

// SGDKernel: (1 - lr*wd)*w - (lr*rescale)*g, or (1 - lr*wd)*w - lr*clip(rescale*g).
template <bool CLIP>
struct SgdPerWeight {
  static constexpr int kStates = 0;
  static inline float step(float w, float g, float&, float&, float&, float lr, float wd, const Hyper& h, bool) {
    if (CLIP) return (1.f - lr * wd) * w - lr * clip_bound(h.rescale * g, h.clip);
    return (1.f - lr * wd) * w - (lr * h.rescale) * g;
  }
};

// MultiSGDKernel (and SGDMomKernel, MP_SGDMomKernel: the same expression):
// mom = momentum*mom - lr*wd*w - lr*rescale*g; w = w + mom. Plain multi-SGD: mom 0.
template <bool MOM, bool CLIP>
struct SgdMulti {
  static constexpr int kStates = MOM ? 1 : 0;
  static inline float step(float w, float g, float& mom, float&, float&, float lr, float wd, const Hyper& h, bool) {
    const float m0 = MOM ? mom : 0.f;
    float m;
    if (CLIP) m = h.momentum * m0 - lr * wd * w - lr * clip_bound(h.rescale * g, h.clip);
    else m = h.momentum * m0 - lr * wd * w - lr * h.rescale * g;
    if (MOM) mom = m;
    return w + m;
  }
};

// The last argument of step(): which inputs the result is stored over (NAG reads them back).
constexpr int kWeightIsOut = 1, kGradIsOut = 2;

// NAGMomKernel. Its last line reads the weight and the gradient again *after* the new
// weight was stored: with out=weight (in place) it sees the new weight, with out=grad the
// new weight as gradient. MP_NAGMomKernel always reads its new float32 master weight.
template <bool CLIP, bool MP>
struct NagMom {
  static constexpr int kStates = 1;
  static inline float step(float w, float g, float& mom, float&, float&, float lr, float wd, const Hyper& h,
                           int aliased) {
    const float cg = CLIP ? clip_bound(h.rescale * g, h.clip) : h.rescale * g;
    const float m = h.momentum * mom;
    const float nw = w - m + (h.momentum + 1) * (m - lr * (cg + wd * w));
    const float w_after = (MP || (aliased & kWeightIsOut)) ? nw : w;
    const float g_after = (!MP && (aliased & kGradIsOut)) ? nw : g;
    const float cg_after = CLIP ? clip_bound(h.rescale * g_after, h.clip) : h.rescale * g_after;
    mom = m - lr * (cg_after + wd * w_after);
    return nw;
  }
};

// AdamUpdateKernel.
template <bool CLIP>
struct Adam {
  static constexpr int kStates = 2;
  static inline float step(float w, float g, float& mean, float& var, float&, float lr, float wd, const Hyper& h,
                           bool) {
    float gr = g * h.rescale + w * wd;
    if (CLIP) gr = clip_bound(gr, h.clip);
    const float m = h.beta1 * mean + (1.f - h.beta1) * gr;
    const float v = h.beta2 * var + (1.f - h.beta2) * gr * gr;
    mean = m;
    var = v;
    return w - lr * m / (std::sqrt(v) + h.epsilon);
  }
};

// RMSPropUpdateKernel (Tieleman & Hinton).
template <bool CLIP, bool CLIPW>
struct Rmsprop {
  static constexpr int kStates = 1;
  static inline float step(float w, float g, float& n, float&, float&, float lr, float wd, const Hyper& h, bool) {
    float gr = h.rescale * g + wd * w;
    if (CLIP) gr = clip_bound(gr, h.clip);
    const float nn = (1.f - h.gamma1) * (gr * gr) + h.gamma1 * n;
    n = nn;
    const float nw = w - lr * (gr / std::sqrt(nn + h.epsilon));
    return CLIPW ? clip_bound(nw, h.clip_weights) : nw;
  }
};

// RMSPropAlexUpdateKernel (Graves, centered).
template <bool CLIP, bool CLIPW>
struct RmspropAlex {
  static constexpr int kStates = 3;
  static inline float step(float w, float g, float& n, float& gs, float& delta, float lr, float wd, const Hyper& h,
                           bool) {
    float gr = h.rescale * g + wd * w;
    if (CLIP) gr = clip_bound(gr, h.clip);
    const float nn = (1.f - h.gamma1) * gr * gr + h.gamma1 * n;
    const float ng = (1.f - h.gamma1) * gr + h.gamma1 * gs;
    const float nd = h.gamma2 * delta - lr * gr / std::sqrt(nn - ng * ng + h.epsilon);
    n = nn, gs = ng, delta = nd;
    return CLIPW ? clip_bound(w + nd, h.clip_weights) : w + nd;
  }
};

// mxnet.optimizer.AdaGrad.update, dense: one rounding per MXNet op, in its order.
// `lr` is the learning rate; the op multiplies by -lr (float(-lr) == -float(lr)).
template <bool CLIP>
struct Adagrad {
  static constexpr int kStates = 1;
  static inline float step(float w, float g, float& hist, float&, float&, float lr, float wd, const Hyper& h, bool) {
    float gr = g * h.rescale;                      // grad * rescale_grad
    if (CLIP) gr = clip_range(gr, h.clip_lo, h.clip_hi);  // clip(grad, -c, c)
    const float hn = hist + gr * gr;               // history[:] += square(grad)
    hist = hn;
    const float div = gr / std::sqrt(hn + h.epsilon);  // grad / sqrt(history + eps)
    return w + (div + w * wd) * -lr;               // weight[:] += (div + weight*wd) * -lr
  }
};

}  // namespace minpy_kernels
