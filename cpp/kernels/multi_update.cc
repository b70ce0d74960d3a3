// _minpy_multi_sgd_mom_update / _minpy_multi_sgd_update: one op call updates
// N float32 weights (N unbounded; MXNet's own multi_sgd ops are split into
// chunks by the optimizer and cost a kernel launch each).
//
// Same inputs, attributes and outputs as MXNet 1.9.1's multi_sgd_mom_update /
// multi_sgd_update, and bit-identical results: the float expression below is
// MXNet's MultiSGDKernel (src/operator/optimizer_op-inl.h) term for term,
//   mom = momentum*mom - lr*wd*w - lr*rescale*g          (no clipping)
//   mom = momentum*mom - lr*wd*w - lr*clip(rescale*g)     (clip_gradient >= 0)
//   w   = w + mom
// evaluated left to right in float, compiled without FP contraction. Plain
// sgd is the same kernel with momentum 0 and mom 0 (as in MXNet).
//
// Momenta are mutated inputs; outputs may be the weight arrays themselves. With
// weights_in_place=1 the weights are mutated inputs too and the op has a single
// placeholder output: a graph then passes MXNet one array per weight fewer, and
// MXNet's cost of launching the op grows with the number of arrays it is handed.
#include <string>
#include <vector>

#include "mxnet/lib_api.h"

#include "attrs.h"

using namespace mxnet::ext;

namespace minpy_kernels {
namespace {

struct SgdParams {
  int num_weights = 0;
  std::vector<float> lrs, wds;
  float momentum = 0.0f, rescale_grad = 1.0f, clip_gradient = -1.0f;
  // formula="sgd_update": plain SGD as MXNet's per-weight sgd_update computes it, which
  // rounds differently from multi_sgd_update once wd != 0 (the runtime groups those calls).
  bool per_weight_formula = false;
  bool weights_in_place = false;  // weights mutated in place; one placeholder output
};

bool weights_in_place(const AttrMap& attrs) { return attr_or(attrs, "weights_in_place", "0") == "1"; }

SgdParams parse_params(const AttrMap& attrs, bool with_momentum) {
  SgdParams p;
  p.num_weights = static_cast<int>(parse_int(attr(attrs, "num_weights")));
  if (p.num_weights < 1) throw std::runtime_error("num_weights must be >= 1");
  p.lrs = parse_float_tuple(attr(attrs, "lrs"));
  p.wds = parse_float_tuple(attr(attrs, "wds"));
  if (static_cast<int>(p.lrs.size()) != p.num_weights || static_cast<int>(p.wds.size()) != p.num_weights)
    throw std::runtime_error("lrs and wds need num_weights entries each");
  if (with_momentum) p.momentum = parse_float(attr_or(attrs, "momentum", "0"));
  p.rescale_grad = parse_float(attr_or(attrs, "rescale_grad", "1"));
  p.clip_gradient = parse_float(attr_or(attrs, "clip_gradient", "-1"));
  p.per_weight_formula = !with_momentum && attr_or(attrs, "formula", "multi_sgd_update") == "sgd_update";
  p.weights_in_place = weights_in_place(attrs);
  return p;
}

#define KI static inline __attribute__((always_inline))

// One tensor. INPLACE: the new weight goes back into w (out == w), which keeps
// every pointer __restrict so the loop vectorizes without alias checks.
template <bool MOM, bool CLIP, bool INPLACE>
KI void update_one(float* __restrict out, float* __restrict w, const float* __restrict g,
                   float* __restrict m, int64_t n, float lr, float wd, float momentum,
                   float rescale, float clip) {
  for (int64_t i = 0; i < n; ++i) {
    const float wi = w[i];
    const float mi = MOM ? m[i] : 0.0f;
    float nm;
    if (CLIP) {
      float cg = rescale * g[i];
      cg = cg > clip ? clip : (cg < -clip ? -clip : cg);  // mshadow_op::clip
      nm = momentum * mi - lr * wd * wi - lr * cg;
    } else {
      nm = momentum * mi - lr * wd * wi - lr * rescale * g[i];
    }
    if (MOM) m[i] = nm;
    const float nw = wi + nm;
    if (INPLACE) w[i] = nw; else out[i] = nw;
  }
}

// Plain SGD in MXNet's SGDKernel order: (1 - lr*wd)*w - lr*clip(rescale*g), or
// without clipping (1 - lr*wd)*w - (lr*rescale)*g.
template <bool CLIP>
KI void sgd_per_weight(float* __restrict out, const float* w, const float* __restrict g, int64_t n, float lr,
                       float wd, float rescale, float clip) {
  const float decay = 1.f - lr * wd;
  const float lr_rescale = lr * rescale;
  for (int64_t i = 0; i < n; ++i) {
    float step;
    if (CLIP) {
      float cg = rescale * g[i];
      cg = cg > clip ? clip : (cg < -clip ? -clip : cg);
      step = lr * cg;
    } else {
      step = lr_rescale * g[i];
    }
    out[i] = decay * w[i] - step;  // elementwise: safe when out == w
  }
}

struct TensorArgs {
  float* out;
  float* w;
  const float* g;
  float* m;  // nullptr for plain sgd
  int64_t n;
};

template <bool MOM, bool CLIP>
KI void update_all_t(const SgdParams& p, const TensorArgs* t) {
  for (int k = 0; k < p.num_weights; ++k) {
    const TensorArgs& a = t[k];
    if (a.out == a.w)
      update_one<MOM, CLIP, true>(nullptr, a.w, a.g, a.m, a.n, p.lrs[k], p.wds[k], p.momentum,
                                  p.rescale_grad, p.clip_gradient);
    else
      update_one<MOM, CLIP, false>(a.out, a.w, a.g, a.m, a.n, p.lrs[k], p.wds[k], p.momentum,
                                   p.rescale_grad, p.clip_gradient);
  }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void update_all(const SgdParams& p, const TensorArgs* t, bool mom) {
  const bool clip = p.clip_gradient >= 0.0f;
  if (p.per_weight_formula) {
    for (int k = 0; k < p.num_weights; ++k) {
      if (clip) sgd_per_weight<true>(t[k].out, t[k].w, t[k].g, t[k].n, p.lrs[k], p.wds[k], p.rescale_grad, p.clip_gradient);
      else sgd_per_weight<false>(t[k].out, t[k].w, t[k].g, t[k].n, p.lrs[k], p.wds[k], p.rescale_grad, p.clip_gradient);
    }
    return;
  }
  if (mom) {
    if (clip) update_all_t<true, true>(p, t); else update_all_t<true, false>(p, t);
  } else {
    if (clip) update_all_t<false, true>(p, t); else update_all_t<false, false>(p, t);
  }
}

template <bool MOM>
class MultiSgdState : public CustomStatefulOp {
 public:
  explicit MultiSgdState(SgdParams p) : p_(std::move(p)), args_(p_.num_weights) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                        const OpResource&) override {
    const int stride = MOM ? 3 : 2;
    const int nw = p_.num_weights;
    const int n_out = p_.weights_in_place ? 1 : nw;
    if (static_cast<int>(inputs->size()) != stride * nw || static_cast<int>(outputs->size()) != n_out) {
      MX_ERROR_MSG << "multi sgd: expected " << stride * nw << " inputs and " << n_out << " outputs";
      return MX_FAIL;
    }
    for (int k = 0; k < nw; ++k) {
      MXTensor& w = (*inputs)[stride * k];
      MXTensor& g = (*inputs)[stride * k + 1];
      MXTensor& o = p_.weights_in_place ? w : (*outputs)[k];
      const int64_t n = w.size();
      bool ok = w.dtype == kFloat32 && g.dtype == kFloat32 && o.dtype == kFloat32 &&
                g.size() == n && o.size() == n;
      float* m = nullptr;
      if (MOM) {
        MXTensor& mt = (*inputs)[stride * k + 2];
        ok = ok && mt.dtype == kFloat32 && mt.size() == n;
        m = mt.data<float>();
      }
      if (!ok) {
        MX_ERROR_MSG << "multi sgd: weight " << k << ": all arrays must be float32 of equal size";
        return MX_FAIL;
      }
      args_[k] = {o.data<float>(), w.data<float>(), g.data<float>(), m, n};
    }
    update_all(p_, args_.data(), MOM);
    if (p_.weights_in_place) {
      MXTensor& placeholder = (*outputs)[0];
      if (placeholder.dtype == kFloat32 && placeholder.size() >= 1) *placeholder.data<float>() = 0.0f;
    }
    return MX_SUCCESS;
  }

 private:
  SgdParams p_;
  std::vector<TensorArgs> args_;  // reused per call (an op state runs one call at a time)
};

template <bool MOM>
MXReturnValue parse_attrs(const AttrMap& attrs, int* num_in, int* num_out) {
  try {
    int n = static_cast<int>(parse_int(attr(attrs, "num_weights")));
    *num_in = (MOM ? 3 : 2) * n;
    *num_out = weights_in_place(attrs) ? 1 : n;
    return MX_SUCCESS;
  } catch (const std::exception& e) {
    MX_ERROR_MSG << "multi sgd: " << e.what();
    return MX_FAIL;
  }
}

MXReturnValue infer_type(const AttrMap&, std::vector<int>* in_types, std::vector<int>* out_types) {
  for (size_t j = 0; j < in_types->size(); ++j) {
    if ((*in_types)[j] != kFloat32) {
      MX_ERROR_MSG << "multi sgd: input " << j << " must be float32";
      return MX_FAIL;
    }
  }
  for (auto& t : *out_types) t = kFloat32;
  return MX_SUCCESS;
}

template <bool MOM>
MXReturnValue infer_shape(const AttrMap& attrs, std::vector<std::vector<unsigned int>>* in_shapes,
                          std::vector<std::vector<unsigned int>>* out_shapes) {
  const size_t stride = MOM ? 3 : 2;
  if (weights_in_place(attrs)) {
    (*out_shapes)[0] = {1};
    return MX_SUCCESS;
  }
  for (size_t k = 0; k < out_shapes->size(); ++k) (*out_shapes)[k] = (*in_shapes)[stride * k];
  return MX_SUCCESS;
}

// Momenta are always updated in place; the weights too with weights_in_place=1.
template <bool MOM>
MXReturnValue mutate_inputs(const AttrMap& attrs, std::vector<int>* idx) {
  try {
    const int n = static_cast<int>(parse_int(attr(attrs, "num_weights")));
    const int stride = MOM ? 3 : 2;
    const bool weights = weights_in_place(attrs);
    for (int k = 0; k < n; ++k) {
      if (weights) idx->push_back(stride * k);
      if (MOM) idx->push_back(stride * k + 2);
    }
    return MX_SUCCESS;
  } catch (const std::exception& e) {
    MX_ERROR_MSG << "multi sgd: " << e.what();
    return MX_FAIL;
  }
}

template <bool MOM>
MXReturnValue create_state(const AttrMap& attrs, const MXContext&,
                           const std::vector<std::vector<unsigned int>>&, const std::vector<int>,
                           CustomStatefulOp** state) {
  try {
    *state = CustomStatefulOp::create<MultiSgdState<MOM>>(parse_params(attrs, MOM));
    return MX_SUCCESS;
  } catch (const std::exception& e) {
    MX_ERROR_MSG << "multi sgd: " << e.what();
    return MX_FAIL;
  }
}

}  // namespace

REGISTER_OP(_minpy_multi_sgd_mom_update)
    .setParseAttrs(parse_attrs<true>)
    .setInferType(infer_type)
    .setInferShape(infer_shape<true>)
    .setMutateInputs(mutate_inputs<true>)
    .setCreateOpState(create_state<true>, "cpu");

REGISTER_OP(_minpy_multi_sgd_update)
    .setParseAttrs(parse_attrs<false>)
    .setInferType(infer_type)
    .setInferShape(infer_shape<false>)
    .setMutateInputs(mutate_inputs<false>)
    .setCreateOpState(create_state<false>, "cpu");

}  // namespace minpy_kernels
