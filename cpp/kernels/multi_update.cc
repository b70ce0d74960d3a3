// Multi-tensor optimizer updates: one op call updates N weights (N unbounded;
// MXNet's own multi-tensor ops are split into chunks of 4 by the optimizer, stop at
// 60 weights, exist only for SGD and cannot be put in a graph in 1.9.1).
//
//   _minpy_multi_sgd_update          (w, g)                 SGD: formula = multi_sgd_update | sgd_update
//   _minpy_multi_sgd_mom_update      (w, g, mom)            SGD with momentum
//   _minpy_multi_nag_mom_update      (w, g, mom)            NAG
//   _minpy_multi_adam_update         (w, g, mean, var)      Adam
//   _minpy_multi_rmsprop_update      (w, g, n)              RMSProp
//   _minpy_multi_rmspropalex_update  (w, g, n, gs, delta)   RMSProp, centered
//   _minpy_multi_adagrad_update      (w, g, history)        AdaGrad (its Python update, dense)
//   _minpy_multi_mp_sgd_update       (w16, g16, w32)        multi_precision: float16 weights,
//   _minpy_multi_mp_sgd_mom_update   (w16, g16, mom, w32)   float32 states and master copy
//   _minpy_multi_mp_nag_mom_update   (w16, g16, mom, w32)
//
// Inputs: the tuple above once per weight; with hyper_inputs=1, then one float32 array of 3
// per weight holding its learning rate, weight decay and rescale_grad (values that change
// during training are graph inputs, not attributes: a new value is not a new graph).
// Attributes: num_weights; lrs, wds: one per weight, and rescale_grad (none of the three
// with hyper_inputs);
// clip_gradient and the rule's own (momentum, beta1, beta2, epsilon, gamma1, gamma2,
// clip_weights; AdaGrad: clip_gradient is its clip bound c, epsilon its eps). Float
// attributes are parsed with strtof: the runtime writes them as exact float32 values
// (it knows how MXNet parses the attributes of the op it replaces).
// States (and the master copies) are mutated inputs. Outputs: the new weights, or with
// weights_in_place=1 the weights are mutated inputs too and there is one placeholder
// output, so a graph hands MXNet one array per weight fewer (its cost of launching an
// op grows with the arrays it is given).
//
// Threads: a call over enough elements splits the elements of all its weights, taken as one
// range, into chunks that our threads take on demand (parallel.h). Every element is
// computed by the same code whichever thread runs it (no element reads another's value), so
// the split changes no bit; a call whose arrays overlap other than one array given twice to
// one weight (g is w) runs on one thread, in weight order, as before.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mxnet/lib_api.h"

#include "attrs.h"
#include "parallel.h"
#include "update_rules.h"

using namespace mxnet::ext;

namespace minpy_kernels {
namespace {

enum class Rule { kSgd, kSgdMom, kNagMom, kAdam, kRmsprop, kRmspropAlex, kAdagrad };

struct OpDef {
  const char* name;
  Rule rule;
  bool mp;     // float16 weights and grads, float32 master copy as the tuple's last array
  int stride;  // arrays per weight
};

const OpDef kSgdDef{"_minpy_multi_sgd_update", Rule::kSgd, false, 2};
const OpDef kSgdMomDef{"_minpy_multi_sgd_mom_update", Rule::kSgdMom, false, 3};
const OpDef kNagDef{"_minpy_multi_nag_mom_update", Rule::kNagMom, false, 3};
const OpDef kAdamDef{"_minpy_multi_adam_update", Rule::kAdam, false, 4};
const OpDef kRmspropDef{"_minpy_multi_rmsprop_update", Rule::kRmsprop, false, 3};
const OpDef kRmspropAlexDef{"_minpy_multi_rmspropalex_update", Rule::kRmspropAlex, false, 5};
const OpDef kAdagradDef{"_minpy_multi_adagrad_update", Rule::kAdagrad, false, 3};
const OpDef kMpSgdDef{"_minpy_multi_mp_sgd_update", Rule::kSgd, true, 3};
const OpDef kMpSgdMomDef{"_minpy_multi_mp_sgd_mom_update", Rule::kSgdMom, true, 4};
const OpDef kMpNagDef{"_minpy_multi_mp_nag_mom_update", Rule::kNagMom, true, 4};

struct Params {
  const OpDef* def = nullptr;
  int num_weights = 0;
  std::vector<float> lrs, wds;
  Hyper h;
  bool per_weight_sgd = false;  // formula=sgd_update: SGDKernel's rounding, not MultiSGDKernel's
  bool weights_in_place = false;
  bool hyper_inputs = false;  // lr, wd, rescale_grad per weight from an input array
};

bool flag(const AttrMap& attrs, const char* key) { return attr_or(attrs, key, "0") == "1"; }

float fattr(const AttrMap& attrs, const char* key, float dflt) {
  auto it = attrs.find(key);
  return it == attrs.end() ? dflt : parse_float(it->second);
}

int num_weights(const AttrMap& attrs) {
  const int n = static_cast<int>(parse_int(attr(attrs, "num_weights")));
  if (n < 1) throw std::runtime_error("num_weights must be >= 1");
  return n;
}

Params parse_params(const OpDef& def, const AttrMap& attrs) {
  Params p;
  p.def = &def;
  p.num_weights = num_weights(attrs);
  p.hyper_inputs = flag(attrs, "hyper_inputs");
  if (!p.hyper_inputs) {
    p.lrs = parse_float_tuple(attr(attrs, "lrs"));
    p.wds = parse_float_tuple(attr(attrs, "wds"));
    if (static_cast<int>(p.lrs.size()) != p.num_weights || static_cast<int>(p.wds.size()) != p.num_weights)
      throw std::runtime_error("lrs and wds need num_weights entries each");
  }
  Hyper& h = p.h;
  h.rescale = p.hyper_inputs ? 1.f : fattr(attrs, "rescale_grad", 1.f);
  h.clip = fattr(attrs, "clip_gradient", -1.f);
  h.momentum = fattr(attrs, "momentum", 0.f);
  h.beta1 = fattr(attrs, "beta1", 0.9f);
  h.beta2 = fattr(attrs, "beta2", 0.999f);
  h.epsilon = fattr(attrs, "epsilon", def.rule == Rule::kAdagrad ? 1e-7f : 1e-8f);
  h.gamma1 = fattr(attrs, "gamma1", 0.95f);
  h.gamma2 = fattr(attrs, "gamma2", 0.9f);
  h.clip_weights = fattr(attrs, "clip_weights", -1.f);
  if (def.rule == Rule::kAdagrad) {  // Python's `clip(grad, -c, c)`: any c given clips, even 0
    h.clip_lo = -h.clip, h.clip_hi = h.clip;
  }
  p.per_weight_sgd = def.rule == Rule::kSgd && attr_or(attrs, "formula", "multi_sgd_update") == "sgd_update";
  p.weights_in_place = flag(attrs, "weights_in_place");
  return p;
}

// One weight's arrays. Weights and grads are float or uint16_t (float16 bits).
struct TensorArgs {
  void* out;
  void* w;
  const void* g;
  float* s[3];  // states in tuple order (mp: the master copy is s[last])
  float* w32;   // mp only
  int64_t n;
  float lr, wd, rescale;  // rescale: rescale_grad, this weight's (Hyper's is not read)
};

// State K of element i, or a scratch value for a rule with fewer states.
template <class R, int K>
static inline float& state(float* const* s, int64_t i, float& scratch) {
  if constexpr (K < R::kStates) return s[K][i];
  else return scratch;
}

template <class R, bool MP, bool IN_PLACE>
static inline void run_tensor_t(const TensorArgs& a, const Hyper& hyper) {
  float* const s[3] = {a.s[0], a.s[1], a.s[2]};
  // Local copies of the scalars: stores through the float pointers below may alias a float
  // member of `a` or `hyper` as far as the compiler knows, which made it reload them at every
  // element and gave up vectorizing the loop (Adam ran at 12 ns an element). Same values.
  Hyper h = hyper;
  h.rescale = a.rescale;
  const float lr = a.lr, wd = a.wd;
  if constexpr (MP) {
    uint16_t* out = static_cast<uint16_t*>(a.out);
    const uint16_t* g = static_cast<const uint16_t*>(a.g);
    for (int64_t i = 0; i < a.n; ++i) {
      float z0 = 0.f, z1 = 0.f, z2 = 0.f;
      const float nw = R::step(a.w32[i], half_to_float(g[i]), state<R, 0>(s, i, z0), state<R, 1>(s, i, z1),
                               state<R, 2>(s, i, z2), lr, wd, h, IN_PLACE);
      a.w32[i] = nw;
      out[i] = float_to_half(nw);
    }
  } else if constexpr (IN_PLACE) {
    float* w = static_cast<float*>(a.w);
    const float* g = static_cast<const float*>(a.g);
    const int aliased = kWeightIsOut | (a.g == a.w ? kGradIsOut : 0);
    for (int64_t i = 0; i < a.n; ++i) {
      float z0 = 0.f, z1 = 0.f, z2 = 0.f;
      w[i] = R::step(w[i], g[i], state<R, 0>(s, i, z0), state<R, 1>(s, i, z1), state<R, 2>(s, i, z2), lr, wd,
                     h, aliased);
    }
  } else {
    float* out = static_cast<float*>(a.out);
    const float* w = static_cast<const float*>(a.w);
    const float* g = static_cast<const float*>(a.g);
    // Called eagerly (an eager replay, or by the user) out= may be an input's own array.
    const int aliased = (a.out == a.w ? kWeightIsOut : 0) | (a.out == a.g ? kGradIsOut : 0);
    for (int64_t i = 0; i < a.n; ++i) {
      float z0 = 0.f, z1 = 0.f, z2 = 0.f;
      out[i] = R::step(w[i], g[i], state<R, 0>(s, i, z0), state<R, 1>(s, i, z1), state<R, 2>(s, i, z2), lr, wd,
                       h, aliased);
    }
  }
}

// `in place`: the new weight goes over the weight read (out=weight), as MXNet's kernels
// see it when their output aliases their input (NAG reads the weight again after it).
template <class R, bool MP>
static inline void run_tensor(const TensorArgs& a, const Hyper& h) {
  if (a.out == a.w) run_tensor_t<R, MP, true>(a, h);
  else run_tensor_t<R, MP, false>(a, h);
}

// Elements [lo, hi) of one weight's arrays, as arguments of their own.
static inline TensorArgs piece(const TensorArgs& a, int64_t lo, int64_t hi, bool mp) {
  const int64_t wbytes = mp ? 2 : 4;  // weights and gradients: float16 or float32
  TensorArgs s = a;
  s.out = static_cast<char*>(a.out) + lo * wbytes;
  s.w = static_cast<char*>(a.w) + lo * wbytes;
  s.g = static_cast<const char*>(a.g) + lo * wbytes;
  for (float*& st : s.s)
    if (st) st += lo;
  if (s.w32) s.w32 += lo;
  s.n = hi - lo;
  return s;
}

// Elements [begin, end) of a call, counted over its weights in order: weight k holds
// [starts[k], starts[k + 1]).
struct Range {
  const int64_t* starts;
  int64_t begin, end;
};

template <class R, bool MP>
static inline void run_all(const Params& p, const TensorArgs* t, const Range& r) {
  const int64_t* starts = r.starts;
  const int64_t begin = r.begin, end = r.end;
  int k = static_cast<int>(std::upper_bound(starts, starts + p.num_weights + 1, begin) - starts) - 1;
  for (; k < p.num_weights && starts[k] < end; ++k) {
    const int64_t lo = std::max(begin, starts[k]) - starts[k], hi = std::min(end, starts[k + 1]) - starts[k];
    if (lo < hi) run_tensor<R, MP>(lo == 0 && hi == t[k].n ? t[k] : piece(t[k], lo, hi, MP), p.h);
  }
}

// The dispatch: one instantiation per rule and per flag that changes the arithmetic,
// compiled for AVX-512, AVX2 and baseline x86-64 (chosen at load time). Runs the
// elements of range r.
__attribute__((target_clones("avx512f", "avx2", "default")))
void update_all(const Params& p, const TensorArgs* t, const Range& r) {
  const Hyper& h = p.h;
  const bool clip = h.clip >= 0.f, clipw = h.clip_weights >= 0.f, mp = p.def->mp;
  switch (p.def->rule) {
    case Rule::kSgd:
      if (p.per_weight_sgd) {
        if (mp) clip ? run_all<SgdPerWeight<true>, true>(p, t, r) : run_all<SgdPerWeight<false>, true>(p, t, r);
        else clip ? run_all<SgdPerWeight<true>, false>(p, t, r) : run_all<SgdPerWeight<false>, false>(p, t, r);
      } else {
        if (mp) clip ? run_all<SgdMulti<false, true>, true>(p, t, r) : run_all<SgdMulti<false, false>, true>(p, t, r);
        else clip ? run_all<SgdMulti<false, true>, false>(p, t, r) : run_all<SgdMulti<false, false>, false>(p, t, r);
      }
      break;
    case Rule::kSgdMom:
      if (mp) clip ? run_all<SgdMulti<true, true>, true>(p, t, r) : run_all<SgdMulti<true, false>, true>(p, t, r);
      else clip ? run_all<SgdMulti<true, true>, false>(p, t, r) : run_all<SgdMulti<true, false>, false>(p, t, r);
      break;
    case Rule::kNagMom:
      if (mp) clip ? run_all<NagMom<true, true>, true>(p, t, r) : run_all<NagMom<false, true>, true>(p, t, r);
      else clip ? run_all<NagMom<true, false>, false>(p, t, r) : run_all<NagMom<false, false>, false>(p, t, r);
      break;
    case Rule::kAdam:
      clip ? run_all<Adam<true>, false>(p, t, r) : run_all<Adam<false>, false>(p, t, r);
      break;
    case Rule::kRmsprop:
      if (clip) clipw ? run_all<Rmsprop<true, true>, false>(p, t, r) : run_all<Rmsprop<true, false>, false>(p, t, r);
      else clipw ? run_all<Rmsprop<false, true>, false>(p, t, r) : run_all<Rmsprop<false, false>, false>(p, t, r);
      break;
    case Rule::kRmspropAlex:
      if (clip) clipw ? run_all<RmspropAlex<true, true>, false>(p, t, r) : run_all<RmspropAlex<true, false>, false>(p, t, r);
      else clipw ? run_all<RmspropAlex<false, true>, false>(p, t, r) : run_all<RmspropAlex<false, false>, false>(p, t, r);
      break;
    case Rule::kAdagrad:
      clip ? run_all<Adagrad<true>, false>(p, t, r) : run_all<Adagrad<false>, false>(p, t, r);
      break;
  }
}

int num_inputs(const Params& p) { return p.def->stride * p.num_weights + (p.hyper_inputs ? p.num_weights : 0); }

// Elements a thread must get for a second thread to pay (measured: benchmarks/kernel_threads.py).
constexpr int64_t kMinElemsPerThread = int64_t(1) << 16;
constexpr int64_t kChunkElems = int64_t(1) << 14;  // 64 KiB of each float32 array

// True if no two arrays of the call share memory, except one array given twice to one weight
// (g is w, out is w): each element then reads and writes only its own places, in any order.
// Arrays that overlap otherwise (a view of another weight, an array given to two weights)
// make the result depend on the order elements run in: such a call stays on one thread.
bool arrays_independent(const Params& p, const TensorArgs* t) {
  struct Span {
    uintptr_t lo, hi;
  };
  std::vector<Span> spans;
  spans.reserve(5 * p.num_weights);
  const uintptr_t wbytes = p.def->mp ? 2 : 4;
  for (int k = 0; k < p.num_weights; ++k) {
    const TensorArgs& a = t[k];
    if (a.n == 0) continue;
    const void* arrays[] = {a.out, a.w, a.g, a.s[0], a.s[1], a.s[2], a.w32};
    const uintptr_t bytes[] = {wbytes, wbytes, wbytes, 4, 4, 4, 4};
    for (int j = 0; j < 7; ++j) {
      if (!arrays[j]) continue;
      bool repeated = false;  // the same array given twice to this weight
      for (int i = 0; i < j; ++i) repeated = repeated || arrays[i] == arrays[j];
      const uintptr_t lo = reinterpret_cast<uintptr_t>(arrays[j]);
      if (!repeated) spans.push_back({lo, lo + bytes[j] * static_cast<uintptr_t>(a.n)});
    }
  }
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.lo < y.lo; });
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].lo < spans[i - 1].hi) return false;
  return true;
}

class MultiUpdateState : public CustomStatefulOp {
 public:
  explicit MultiUpdateState(Params p) : p_(std::move(p)), args_(p_.num_weights) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource&) override {
    const OpDef& d = *p_.def;
    const int nw = p_.num_weights, stride = d.stride;
    const int n_out = p_.weights_in_place ? 1 : nw;
    if (static_cast<int>(inputs->size()) != num_inputs(p_) || static_cast<int>(outputs->size()) != n_out) {
      MX_ERROR_MSG << d.name << ": expected " << num_inputs(p_) << " inputs and " << n_out << " outputs";
      return MX_FAIL;
    }
    const MXDType wtype = d.mp ? kFloat16 : kFloat32;
    for (int k = 0; k < nw; ++k) {
      MXTensor& w = (*inputs)[stride * k];
      MXTensor& g = (*inputs)[stride * k + 1];
      MXTensor& o = p_.weights_in_place ? w : (*outputs)[k];
      const int64_t n = w.size();
      bool ok = w.dtype == wtype && g.dtype == wtype && o.dtype == wtype && g.size() == n && o.size() == n;
      TensorArgs& a = args_[k];
      a.s[0] = a.s[1] = a.s[2] = nullptr;
      a.w32 = nullptr;
      for (int j = 2; j < stride && ok; ++j) {
        MXTensor& st = (*inputs)[stride * k + j];
        ok = st.dtype == kFloat32 && st.size() == n;
        if (d.mp && j == stride - 1) a.w32 = st.data<float>();
        else a.s[j - 2] = st.data<float>();
      }
      if (p_.hyper_inputs) {
        MXTensor& hy = (*inputs)[stride * nw + k];
        ok = ok && hy.dtype == kFloat32 && hy.size() >= 3;
        const float* v = ok ? hy.data<float>() : nullptr;
        a.lr = v ? v[0] : 0.f, a.wd = v ? v[1] : 0.f, a.rescale = v ? v[2] : 0.f;
      } else {
        a.lr = p_.lrs[k], a.wd = p_.wds[k], a.rescale = p_.h.rescale;
      }
      if (!ok) {
        MX_ERROR_MSG << d.name << ": weight " << k << ": weight, gradient and result must be "
                     << (d.mp ? "float16" : "float32") << ", states float32, all of one size"
                     << (p_.hyper_inputs ? "; its (lr, wd, rescale_grad) a float32 array of 3" : "");
        return MX_FAIL;
      }
      a.out = o.data_ptr;
      a.w = w.data_ptr;
      a.g = g.data_ptr;
      a.n = n;
    }
    starts_.resize(nw + 1);
    starts_[0] = 0;
    for (int k = 0; k < nw; ++k) starts_[k + 1] = starts_[k] + args_[k].n;
    const int64_t total = starts_[nw];
    int threads = threads_for_work(total, kMinElemsPerThread);
    if (threads > 1 && !same_arrays_as_last_call()) independent_ = arrays_independent(p_, args_.data());
    if (!independent_) threads = 1;
    const TensorArgs* t = args_.data();
    const int64_t* starts = starts_.data();
    const int64_t chunk = std::min(kChunkElems, std::max<int64_t>(1024, total / (8 * threads)));
    parallel_chunks(total, chunk, threads,
                    [&](int64_t begin, int64_t end) { update_all(p_, t, Range{starts, begin, end}); });
    if (p_.weights_in_place) {
      MXTensor& placeholder = (*outputs)[0];
      if (placeholder.dtype == kFloat32 && placeholder.size() >= 1) *placeholder.data<float>() = 0.0f;
    }
    return MX_SUCCESS;
  }

 private:
  // True if this call's arrays are where the last checked call's were (a graph's arrays
  // usually are: static_alloc), so arrays_independent's verdict still holds.
  bool same_arrays_as_last_call() {
    std::vector<const void*> now;
    now.reserve(7 * args_.size());
    for (const TensorArgs& a : args_) {
      now.insert(now.end(), {a.out, a.w, a.g, a.s[0], a.s[1], a.s[2], a.w32});
      now.push_back(reinterpret_cast<const void*>(static_cast<uintptr_t>(a.n)));
    }
    const bool same = now == checked_;
    checked_.swap(now);
    return same;
  }

  Params p_;
  std::vector<TensorArgs> args_;  // reused per call (an op state runs one call at a time)
  std::vector<int64_t> starts_;   // weight k's elements are [starts_[k], starts_[k + 1]) of the call
  std::vector<const void*> checked_;  // the arrays (and sizes) arrays_independent last judged
  bool independent_ = false;
};

template <const OpDef& D>
MXReturnValue parse_attrs(const AttrMap& attrs, int* num_in, int* num_out) {
  try {
    const int n = num_weights(attrs);
    *num_in = D.stride * n + (flag(attrs, "hyper_inputs") ? n : 0);
    *num_out = flag(attrs, "weights_in_place") ? 1 : n;
    return MX_SUCCESS;
  } catch (const std::exception& e) {
    MX_ERROR_MSG << D.name << ": " << e.what();
    return MX_FAIL;
  }
}

template <const OpDef& D>
MXReturnValue infer_type(const AttrMap& attrs, std::vector<int>* in_types, std::vector<int>* out_types) {
  const int wtype = D.mp ? kFloat16 : kFloat32;
  const size_t weight_arrays = in_types->size() - (flag(attrs, "hyper_inputs") ? in_types->size() / (D.stride + 1) : 0);
  for (size_t j = 0; j < in_types->size(); ++j) {
    const bool weight_or_grad = j < weight_arrays && j % D.stride < 2;
    const int want = weight_or_grad ? wtype : kFloat32;
    if ((*in_types)[j] != want) {
      MX_ERROR_MSG << D.name << ": input " << j << " must be " << (want == kFloat16 ? "float16" : "float32");
      return MX_FAIL;
    }
  }
  const bool in_place = flag(attrs, "weights_in_place");
  for (auto& t : *out_types) t = in_place ? kFloat32 : wtype;
  return MX_SUCCESS;
}

template <const OpDef& D>
MXReturnValue infer_shape(const AttrMap& attrs, std::vector<std::vector<unsigned int>>* in_shapes,
                          std::vector<std::vector<unsigned int>>* out_shapes) {
  if (flag(attrs, "weights_in_place")) {
    (*out_shapes)[0] = {1};
    return MX_SUCCESS;
  }
  for (size_t k = 0; k < out_shapes->size(); ++k) (*out_shapes)[k] = (*in_shapes)[D.stride * k];
  return MX_SUCCESS;
}

// States (and master copies) are always updated in place; the weights too with weights_in_place=1.
template <const OpDef& D>
MXReturnValue mutate_inputs(const AttrMap& attrs, std::vector<int>* idx) {
  try {
    const int n = num_weights(attrs);
    const bool weights = flag(attrs, "weights_in_place");
    for (int k = 0; k < n; ++k) {
      if (weights) idx->push_back(D.stride * k);
      for (int j = 2; j < D.stride; ++j) idx->push_back(D.stride * k + j);
    }
    return MX_SUCCESS;
  } catch (const std::exception& e) {
    MX_ERROR_MSG << D.name << ": " << e.what();
    return MX_FAIL;
  }
}

template <const OpDef& D>
MXReturnValue create_state(const AttrMap& attrs, const MXContext&, const std::vector<std::vector<unsigned int>>&,
                           const std::vector<int>, CustomStatefulOp** state) {
  try {
    *state = CustomStatefulOp::create<MultiUpdateState>(parse_params(D, attrs));
    return MX_SUCCESS;
  } catch (const std::exception& e) {
    MX_ERROR_MSG << D.name << ": " << e.what();
    return MX_FAIL;
  }
}

// The runtime's direct launch (cpp/src/update_launch.cc): the update of a Trainer step run
// without MXNet's operator machinery, from one engine operation the runtime pushes itself.
// A plan is the op's shared attributes parsed once (as create_state parses them); a run
// gives the arrays' data pointers and each weight's learning rate and weight decay as
// floats, and does what Forward does with weights_in_place=1 (the same update_all).
const OpDef* const kDefs[] = {&kSgdDef, &kSgdMomDef, &kNagDef, &kAdamDef, &kRmspropDef, &kRmspropAlexDef,
                              &kAdagradDef, &kMpSgdDef, &kMpSgdMomDef, &kMpNagDef};

// The op named `op` (one of the _minpy_multi_* names), or null.
const OpDef* def_named(const char* op) {
  for (const OpDef* d : kDefs)
    if (std::string(op) == d->name) return d;
  return nullptr;
}

void* create_plan(const char* op, int num_attrs, const char* const* keys, const char* const* vals) {
  const OpDef* d = def_named(op);
  if (!d) return nullptr;
  AttrMap attrs = attr_map(num_attrs, keys, vals);
  attrs["num_weights"] = "1";  // per run; the rates and decays come with each run
  attrs["lrs"] = "(0,)";
  attrs["wds"] = "(0,)";
  attrs["weights_in_place"] = "1";
  return new Params(parse_params(*d, attrs));
}

void run_plan(const Params& plan, int num_weights, void* const* arrays, const int64_t* sizes, const float* lrs,
              const float* wds, const float* rescales = nullptr) {
  Params p = plan;
  p.num_weights = num_weights;
  const int stride = p.def->stride;
  std::vector<TensorArgs> args(num_weights);
  for (int k = 0; k < num_weights; ++k) {
    TensorArgs& a = args[k];
    void* const* t = arrays + static_cast<size_t>(stride) * k;
    a.s[0] = a.s[1] = a.s[2] = nullptr;
    a.w32 = nullptr;
    for (int j = 2; j < stride; ++j) {
      if (p.def->mp && j == stride - 1) a.w32 = static_cast<float*>(t[j]);
      else a.s[j - 2] = static_cast<float*>(t[j]);
    }
    a.out = a.w = t[0];
    a.g = t[1];
    a.n = sizes[k];
    a.lr = lrs[k];
    a.wd = wds[k];
    a.rescale = rescales ? rescales[k] : p.h.rescale;
  }
  // Split between threads as Forward splits a call; the runtime gives every array its own
  // storage chunk, so no two overlap (what arrays_independent checks there).
  std::vector<int64_t> starts(num_weights + 1, 0);
  for (int k = 0; k < num_weights; ++k) starts[k + 1] = starts[k] + args[k].n;
  const int64_t total = starts[num_weights];
  const int threads = threads_for_work(total, kMinElemsPerThread);
  const int64_t chunk = std::min(kChunkElems, std::max<int64_t>(1024, total / (8 * threads)));
  const TensorArgs* t = args.data();
  parallel_chunks(total, chunk, threads,
                  [&](int64_t begin, int64_t end) { update_all(p, t, Range{starts.data(), begin, end}); });
}

}  // namespace

extern "C" {
// A plan for op `op` (one of the _minpy_multi_* names above) with these shared attributes;
// null if the op is unknown or an attribute does not parse. Freed by minpy_update_plan_free.
__attribute__((visibility("default"))) void* minpy_update_plan_create(const char* op, int num_attrs,
                                                                       const char* const* keys,
                                                                       const char* const* vals) {
  try {
    return create_plan(op, num_attrs, keys, vals);
  } catch (const std::exception&) {
    return nullptr;
  }
}

__attribute__((visibility("default"))) void minpy_update_plan_free(void* plan) { delete static_cast<Params*>(plan); }

// The node of a graph launched without CachedOp (cpp/src/kernel_launch.h): op `op` with the
// node's own attributes (rates and decays included), float32 weights updated in place. Null
// where the node is not that: another layout of its outputs, per-weight hyperparameters from an
// input array, float16 weights. Runs as minpy_update_plan_run with the node's rates.
__attribute__((visibility("default"))) void* minpy_update_node_create(const char* op, int num_attrs,
                                                                       const char* const* keys,
                                                                       const char* const* vals) {
  try {
    const OpDef* d = def_named(op);
    if (!d || d->mp) return nullptr;
    Params p = parse_params(*d, attr_map(num_attrs, keys, vals));
    return p.weights_in_place ? new Params(std::move(p)) : nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
}

// in: the node's inputs (per weight: weight, gradient, states, written through in place; then,
// with hyper_inputs, per weight its (lr, wd, rescale_grad)); out: its one placeholder output,
// set to 0 as Forward sets it. Null, or why the arrays do not fit.
__attribute__((visibility("default"))) const char* minpy_update_node_run(const void* node, const float* const* in,
                                                                         const int64_t* in_sizes, float* const* out,
                                                                         const int64_t* out_sizes) {
  const Params& p = *static_cast<const Params*>(node);
  if (out[0] && out_sizes[0] >= 1) *out[0] = 0.0f;  // the placeholder, as Forward leaves it
  const int nw = p.num_weights, stride = p.def->stride;
  std::vector<int64_t> sizes(nw);
  for (int k = 0; k < nw; ++k) {
    sizes[k] = in_sizes[stride * k];
    for (int j = 1; j < stride; ++j)
      if (in_sizes[stride * k + j] != sizes[k]) return "multi-tensor update: a gradient or state size does not fit";
  }
  void* const* arrays = reinterpret_cast<void* const*>(const_cast<float* const*>(in));
  if (!p.hyper_inputs) {
    run_plan(p, nw, arrays, sizes.data(), p.lrs.data(), p.wds.data());
    return nullptr;
  }
  std::vector<float> lrs(nw), wds(nw), rescales(nw);
  for (int k = 0; k < nw; ++k) {
    const float* h = in[stride * nw + k];
    if (in_sizes[stride * nw + k] < 3) return "multi-tensor update: (lr, wd, rescale_grad) needs 3 values";
    lrs[k] = h[0], wds[k] = h[1], rescales[k] = h[2];
  }
  run_plan(p, nw, arrays, sizes.data(), lrs.data(), wds.data(), rescales.data());
  return nullptr;
}

// One update of `num_weights` weights in place: `arrays` holds the op's arrays per weight
// (weight, gradient, states; mixed precision: master copy last), `sizes` each weight's
// element count. The caller has checked dtypes and sizes (as infer_type and Forward do).
__attribute__((visibility("default"))) void minpy_update_plan_run(const void* plan, int num_weights,
                                                                  void* const* arrays, const int64_t* sizes,
                                                                  const float* lrs, const float* wds) {
  run_plan(*static_cast<const Params*>(plan), num_weights, arrays, sizes, lrs, wds);
}
}

#define MINPY_REGISTER_UPDATE(NAME, DEF)       \
  REGISTER_OP(NAME)                            \
      .setParseAttrs(parse_attrs<DEF>)         \
      .setInferType(infer_type<DEF>)           \
      .setInferShape(infer_shape<DEF>)         \
      .setMutateInputs(mutate_inputs<DEF>)     \
      .setCreateOpState(create_state<DEF>, "cpu")

MINPY_REGISTER_UPDATE(_minpy_multi_sgd_update, kSgdDef);
MINPY_REGISTER_UPDATE(_minpy_multi_sgd_mom_update, kSgdMomDef);
MINPY_REGISTER_UPDATE(_minpy_multi_nag_mom_update, kNagDef);
MINPY_REGISTER_UPDATE(_minpy_multi_adam_update, kAdamDef);
MINPY_REGISTER_UPDATE(_minpy_multi_rmsprop_update, kRmspropDef);
MINPY_REGISTER_UPDATE(_minpy_multi_rmspropalex_update, kRmspropAlexDef);
MINPY_REGISTER_UPDATE(_minpy_multi_adagrad_update, kAdagradDef);
MINPY_REGISTER_UPDATE(_minpy_multi_mp_sgd_update, kMpSgdDef);
MINPY_REGISTER_UPDATE(_minpy_multi_mp_sgd_mom_update, kMpSgdMomDef);
MINPY_REGISTER_UPDATE(_minpy_multi_mp_nag_mom_update, kMpNagDef);

}  // namespace minpy_kernels
