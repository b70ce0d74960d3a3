#include "updates.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "mxapi.h"
#include "mxparse.h"

namespace minpy {

// How an attribute string becomes the float the op computes with (mxparse.h).
enum class Parse { kField, kTupleItem, kExact };

struct UpdateOp {
  std::string name;    // the op as recorded
  std::string kernel;  // our multi-tensor op standing in for it
  int stride;          // arrays per weight: weight, gradient, states (mixed precision: master copy last)
  bool multi;          // num_weights, lrs and wds lists (MXNet's multi ops, and ours)
  bool ours;           // one of our kernels: attributes already exact, hyper_inputs possible
  bool mp;             // float16 weights and gradients
  const char* formula; // SGD without momentum: which of MXNet's two roundings
  std::vector<const char*> shared;  // attributes every weight of one call shares
};

namespace {

struct Default {
  const char* key;
  const char* value;  // MXNet's default, as MXNet would parse it
};
const Default kDefaults[] = {{"rescale_grad", "1"}, {"clip_gradient", "-1"}, {"momentum", "0"},
                             {"beta1", "0.9"},      {"beta2", "0.999"},      {"epsilon", "1e-8"},
                             {"gamma1", "0.95"},    {"gamma2", "0.9"},       {"clip_weights", "-1"}};

const char* default_of(const char* key) {
  for (const auto& d : kDefaults)
    if (std::string(key) == d.key) return d.value;
  return "0";
}

const std::vector<const char*> kSgdShared = {"rescale_grad", "clip_gradient"};
const std::vector<const char*> kMomShared = {"rescale_grad", "clip_gradient", "momentum"};
const std::vector<const char*> kAdamShared = {"rescale_grad", "clip_gradient", "beta1", "beta2", "epsilon"};
const std::vector<const char*> kRmsShared = {"rescale_grad", "clip_gradient", "gamma1", "epsilon", "clip_weights"};
const std::vector<const char*> kAlexShared = {"rescale_grad", "clip_gradient", "gamma1", "gamma2", "epsilon",
                                              "clip_weights"};
const std::vector<const char*> kAdagradShared = {"rescale_grad", "clip_gradient", "epsilon"};

const std::unordered_map<std::string, UpdateOp>& table() {
  static const std::unordered_map<std::string, UpdateOp> m = [] {
    std::unordered_map<std::string, UpdateOp> t;
    auto add = [&](const char* name, const char* kernel, int stride, bool multi, bool ours, bool mp,
                   const char* formula, const std::vector<const char*>& shared) {
      t[name] = UpdateOp{name, kernel, stride, multi, ours, mp, formula, shared};
    };
    // MXNet's per-weight ops
    add("sgd_update", "_minpy_multi_sgd_update", 2, false, false, false, "sgd_update", kSgdShared);
    add("sgd_mom_update", "_minpy_multi_sgd_mom_update", 3, false, false, false, "", kMomShared);
    add("nag_mom_update", "_minpy_multi_nag_mom_update", 3, false, false, false, "", kMomShared);
    add("adam_update", "_minpy_multi_adam_update", 4, false, false, false, "", kAdamShared);
    add("rmsprop_update", "_minpy_multi_rmsprop_update", 3, false, false, false, "", kRmsShared);
    add("rmspropalex_update", "_minpy_multi_rmspropalex_update", 5, false, false, false, "", kAlexShared);
    add("mp_sgd_update", "_minpy_multi_mp_sgd_update", 3, false, false, true, "sgd_update", kSgdShared);
    add("mp_sgd_mom_update", "_minpy_multi_mp_sgd_mom_update", 4, false, false, true, "", kMomShared);
    add("mp_nag_mom_update", "_minpy_multi_mp_nag_mom_update", 4, false, false, true, "", kMomShared);
    // MXNet's multi-tensor ops (no graph form in 1.9.1)
    add("multi_sgd_update", "_minpy_multi_sgd_update", 2, true, false, false, "multi_sgd_update", kSgdShared);
    add("multi_sgd_mom_update", "_minpy_multi_sgd_mom_update", 3, true, false, false, "", kMomShared);
    add("multi_mp_sgd_update", "_minpy_multi_mp_sgd_update", 3, true, false, true, "multi_sgd_update", kSgdShared);
    add("multi_mp_sgd_mom_update", "_minpy_multi_mp_sgd_mom_update", 4, true, false, true, "", kMomShared);
    // ours
    add("_minpy_multi_sgd_update", "_minpy_multi_sgd_update", 2, true, true, false, "", kSgdShared);
    add("_minpy_multi_sgd_mom_update", "_minpy_multi_sgd_mom_update", 3, true, true, false, "", kMomShared);
    add("_minpy_multi_nag_mom_update", "_minpy_multi_nag_mom_update", 3, true, true, false, "", kMomShared);
    add("_minpy_multi_adam_update", "_minpy_multi_adam_update", 4, true, true, false, "", kAdamShared);
    add("_minpy_multi_rmsprop_update", "_minpy_multi_rmsprop_update", 3, true, true, false, "", kRmsShared);
    add("_minpy_multi_rmspropalex_update", "_minpy_multi_rmspropalex_update", 5, true, true, false, "", kAlexShared);
    add("_minpy_multi_adagrad_update", "_minpy_multi_adagrad_update", 3, true, true, false, "", kAdagradShared);
    add("_minpy_multi_mp_sgd_update", "_minpy_multi_mp_sgd_update", 3, true, true, true, "", kSgdShared);
    add("_minpy_multi_mp_sgd_mom_update", "_minpy_multi_mp_sgd_mom_update", 4, true, true, true, "", kMomShared);
    add("_minpy_multi_mp_nag_mom_update", "_minpy_multi_mp_nag_mom_update", 4, true, true, true, "", kMomShared);
    return t;
  }();
  return m;
}

const std::string* find_attr(const std::vector<Attr>& attrs, const char* key) {
  for (const auto& a : attrs)
    if (a.key == key) return &a.val;
  return nullptr;
}

// "(0.1, 0.2)" or "[0.1, 0.2]" -> {"0.1", "0.2"}: the numbers exactly as written.
std::vector<std::string> list_items(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == ')' || c == '[' || c == ']' || c == ' ') continue;
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

float parse(const std::string& s, Parse how) {
  switch (how) {
    case Parse::kField: return mx_float_field(s);
    case Parse::kTupleItem:
    case Parse::kExact: return mx_tuple_item(s);
  }
  return 0.f;
}

std::string tuple_of(const std::vector<std::string>& items) {
  std::string s = "(";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + (items.size() == 1 ? ",)" : ")");
}

bool flag_set(const std::vector<Attr>& attrs, const char* key) {
  const std::string* v = find_attr(attrs, key);
  return v && *v == "1";
}

// Whether a call of our kernel takes its rates, decays and rescale_grad as input arrays.
bool hyper_inputs(const UpdateOp& u, const std::vector<Attr>& attrs) { return u.ours && flag_set(attrs, "hyper_inputs"); }

// Per-weight learning rates and weight decays of a call, as exact floats (none when they
// are input arrays).
bool per_weight_values(const UpdateOp& u, const std::vector<Attr>& attrs, size_t n, std::vector<float>* lrs,
                       std::vector<float>* wds) {
  if (!u.multi) {
    const std::string* lr = find_attr(attrs, "lr");
    const std::string* wd = find_attr(attrs, "wd");
    if (!lr || n != 1) return false;
    lrs->push_back(mx_float_field(*lr));
    wds->push_back(wd ? mx_float_field(*wd) : 0.f);
    return true;
  }
  if (hyper_inputs(u, attrs)) return true;
  const Parse how = u.ours ? Parse::kExact : Parse::kTupleItem;
  const std::string* wd = find_attr(attrs, "wds");
  const std::string* lr = find_attr(attrs, "lrs");
  if (!wd || !lr) return false;
  for (const auto& s : list_items(*wd)) wds->push_back(parse(s, how));
  for (const auto& s : list_items(*lr)) lrs->push_back(parse(s, how));
  return lrs->size() == n && wds->size() == n;
}

// rescale_grad of a call, as the float its kernel computes with.
float rescale_of(const UpdateOp& u, const std::vector<Attr>& attrs) {
  const std::string* v = find_attr(attrs, "rescale_grad");
  const std::string raw = v ? *v : default_of("rescale_grad");
  return u.ours ? mx_tuple_item(raw) : mx_float_field(raw);
}

// The attributes every weight shares, as exact floats, in a fixed order. `lifted`: without
// rescale_grad, which then comes with each weight's input array.
std::vector<Attr> shared_attrs(const UpdateOp& u, const std::vector<Attr>& attrs, bool lifted) {
  std::vector<Attr> out;
  for (const char* key : u.shared) {
    if (lifted && std::string(key) == "rescale_grad") continue;
    const std::string* v = find_attr(attrs, key);
    const std::string raw = v ? *v : default_of(key);
    out.push_back({key, u.ours ? raw : exact_float(mx_float_field(raw))});
  }
  const std::string* f = find_attr(attrs, "formula");
  const std::string formula = u.ours ? (f ? *f : "") : u.formula;
  if (!formula.empty()) out.push_back({"formula", formula});
  return out;
}

}  // namespace

const UpdateOp* update_op(const std::string& name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

const std::string& update_kernel(const UpdateOp& u) { return u.kernel; }

int update_stride(const UpdateOp& u) { return u.stride; }

bool update_per_weight(const UpdateOp& u) { return !u.multi && !u.ours; }

namespace {

// The dtype our kernel wants for array j of a weight: float16 weight and gradient in the
// mixed-precision forms, float32 otherwise.
int wanted_dtype(const UpdateOp& u, size_t j) { return (u.mp && j < 2) ? 2 : 0; }

}  // namespace

bool update_arrays_fit_in_place(const UpdateOp& u, const AVal* arrays, int n) {
  if (n != u.stride) return false;
  const AVal& w = arrays[0];
  for (int j = 0; j < n; ++j) {
    const AVal& a = arrays[j];
    if (a.dtype != wanted_dtype(u, j) || a.dev_type != 1 || a.dev_id != w.dev_id || a.ndim != w.ndim ||
        !std::equal(a.dims, a.dims + a.ndim, w.dims))
      return false;
  }
  return true;
}

bool update_kernel_fits(const UpdateOp& u, const Trace& t, const std::vector<int>& in) {
  const size_t weight_arrays = in.size() - in.size() % static_cast<size_t>(u.stride);
  if (weight_arrays == 0) return false;
  for (size_t k = 0; k < weight_arrays; k += u.stride) {
    const AVal& w = t.values[in[k]].aval;
    for (int j = 0; j < u.stride; ++j) {
      const AVal& a = t.values[in[k + j]].aval;
      if (a.dtype != wanted_dtype(u, j) || a.dev_type != 1 || a.size() != w.size()) return false;
    }
  }
  return true;
}

bool update_arrays_in_cpu_memory_fit(const UpdateOp& u, const std::vector<const AVal*>& arrays) {
  const size_t stride = static_cast<size_t>(u.stride);
  if (arrays.empty() || arrays.size() % stride) return false;
  for (size_t k = 0; k < arrays.size(); k += stride)
    for (size_t j = 0; j < stride; ++j) {
      const AVal& a = *arrays[k + j];
      if (!in_cpu_memory(a.dev_type) || a.dtype != wanted_dtype(u, j) || a.size() != arrays[k]->size()) return false;
    }
  return true;
}

// The kernel of `u` and the attributes its weights share, into a direct update. `lifted`:
// without rescale_grad (the caller adds it).
void set_direct_kernel(const UpdateOp& u, const std::vector<Attr>& attrs, bool lifted, DirectUpdate* d) {
  d->kernel = u.kernel;
  d->stride = u.stride;
  d->mp = u.mp;
  for (auto& a : shared_attrs(u, attrs, lifted)) {
    // keys from u.shared or "formula": static strings, as DirectUpdate wants
    const char* key = "formula";
    for (const char* k : u.shared)
      if (a.key == k) key = k;
    d->attrs.push_back({key, std::move(a.val)});
  }
}

bool direct_update_of(const UpdateOp& u, const std::vector<Attr>& attrs, size_t num_weights, DirectUpdate* d) {
  if (u.ours || !per_weight_values(u, attrs, num_weights, &d->lrs, &d->wds)) return false;
  set_direct_kernel(u, attrs, false, d);
  return true;
}

size_t update_weights(const UpdateOp& u, const Node& n) {
  if (!u.multi) return 1;
  const std::string* nw = find_attr(n.attrs, "num_weights");
  return nw ? static_cast<size_t>(std::atoi(nw->c_str())) : 0;
}

bool kernel_call_attrs(const UpdateOp& u, const std::vector<Attr>& attrs, size_t num_weights,
                       std::vector<float>* hyper_values, std::vector<Attr>* out) {
  std::vector<float> lrs, wds;
  if (hyper_inputs(u, attrs)) return false;  // its values are inputs already
  if (!per_weight_values(u, attrs, num_weights, &lrs, &wds)) return false;
  out->clear();
  out->push_back({"num_weights", std::to_string(num_weights)});
  if (hyper_values) {
    const float rescale = rescale_of(u, attrs);
    hyper_values->clear();
    for (size_t k = 0; k < num_weights; ++k) hyper_values->insert(hyper_values->end(), {lrs[k], wds[k], rescale});
    out->push_back({"hyper_inputs", "1"});
  } else {
    std::vector<std::string> lr_s, wd_s;
    for (float v : lrs) lr_s.push_back(exact_float(v));
    for (float v : wds) wd_s.push_back(exact_float(v));
    out->push_back({"lrs", tuple_of(lr_s)});
    out->push_back({"wds", tuple_of(wd_s)});
  }
  for (auto& a : shared_attrs(u, attrs, hyper_values != nullptr)) out->push_back(std::move(a));
  return true;
}

std::string update_group_key(const Trace& t, const Node& n) {
  const UpdateOp* u = update_op(n.op->name);
  if (!u || n.out.empty()) return "";
  const size_t nw = update_weights(*u, n);
  const bool lifted = hyper_inputs(*u, n.attrs);
  if (nw == 0 || n.in.size() != nw * u->stride + (lifted ? nw : 0) || n.out.size() != nw) return "";
  std::vector<int> arrays(n.in.begin(), n.in.begin() + nw * u->stride);
  if (!update_kernel_fits(*u, t, arrays)) return "";
  // Lifted values are not in the key: the grouping must not depend on what a graph input holds.
  std::string key = u->kernel + (lifted ? "|hyper_inputs" : "|");
  for (const auto& a : shared_attrs(*u, n.attrs, lifted)) key += "|" + a.key + "=" + a.val;
  return key;
}

bool trace_as_direct_update(const Trace& t, const std::vector<OutputSpec>& outputs, DirectUpdate* d) {
  if (t.nodes.empty() || t.recording || t.backward >= 0) return false;
  std::unordered_map<int, NDArrayHandle> goes_to;  // output value -> the array it is written into
  for (const auto& o : outputs)
    if (!goes_to.emplace(o.value, o.handle).second) return false;  // one value into two arrays
  const UpdateOp* u0 = nullptr;
  std::string key0;
  float rescale = 0.f;
  const Node* prev = nullptr;  // the last node whose attributes were read
  const UpdateOp* u = nullptr;
  bool lifted = false;
  std::vector<float> lrs, wds;
  float attr_rescale = 0.f;
  for (const Node& n : t.nodes) {
    // A step's updates repeat one op and one set of attributes: read (and format, for the
    // group key) only those that differ from the last node's; the arrays are checked for each.
    if (!prev || n.op != prev->op || n.attrs != prev->attrs) {
      u = update_op(n.op->name);
      if (!u) return false;
      const std::string key = update_group_key(t, n);
      if (key.empty() || (u0 && key != key0)) return false;
      if (!u0) u0 = u, key0 = key;
      lifted = hyper_inputs(*u, n.attrs);
      lrs.clear(), wds.clear();
      if (!per_weight_values(*u, n.attrs, update_weights(*u, n), &lrs, &wds)) return false;
      attr_rescale = rescale_of(*u, n.attrs);
      prev = &n;
    }
    const size_t nw = update_weights(*u, n), stride = static_cast<size_t>(u->stride);
    if (n.in.size() != nw * stride + (lifted ? nw : 0) || n.out.size() != nw ||
        !update_kernel_fits(*u, t, std::vector<int>(n.in.begin(), n.in.begin() + nw * stride)))
      return false;
    for (size_t k = 0; k < nw; ++k) {
      for (size_t j = 0; j < stride; ++j) {
        const Value& v = t.values[n.in[k * stride + j]];
        if (v.node >= 0 || !v.ext) return false;
        d->arrays.push_back(v.ext);
      }
      const Value& w = t.values[n.in[k * stride]];
      auto it = goes_to.find(n.out[k]);
      if (it == goes_to.end() || it->second != w.ext) return false;
      goes_to.erase(it);
      float lr, wd, r;
      if (lifted) {  // (lr, wd, rescale_grad): a (3,) float32 array the recorder filled
        const Value& hv = t.values[n.in[nw * stride + k]];
        const float* p = hv.node < 0 && hv.ext ? static_cast<const float*>(data_of(hv.ext, 3 * sizeof(float))) : nullptr;
        if (!p) return false;
        lr = p[0], wd = p[1], r = p[2];
      } else {
        lr = lrs[k], wd = wds[k], r = attr_rescale;
      }
      if (!d->sizes.empty() && std::memcmp(&r, &rescale, sizeof r) != 0) return false;
      rescale = r;
      d->sizes.push_back(static_cast<int64_t>(w.aval.size()));
      d->lrs.push_back(lr);
      d->wds.push_back(wd);
      d->dev_id = w.aval.dev_id;
    }
  }
  if (!goes_to.empty() || d->sizes.empty()) return false;  // another result is live
  set_direct_kernel(*u0, t.nodes[0].attrs, true, d);
  d->attrs.push_back({"rescale_grad", exact_float(rescale)});
  return true;
}

bool reads_back_new_weight(const Trace& t, const Node& n) {
  const UpdateOp* u = update_op(n.op->name);
  if (!u || u->mp || u->kernel != "_minpy_multi_nag_mom_update") return false;
  const size_t nw = update_weights(*u, n);
  for (size_t k = 0; k < nw && k < n.targets.size(); ++k) {
    const size_t w = k * static_cast<size_t>(u->stride);
    if (n.targets[k] && w < n.in.size() && t.values[n.in[w]].home == n.targets[k]) return true;
  }
  return false;
}

bool build_update_unit(const Trace& t, const std::vector<int>& members, const std::vector<char>& used_outside,
                       const std::vector<int>& written_into, UpdateUnit* unit) {
  const Node& first = t.nodes[members[0]];
  const UpdateOp* u0 = update_op(first.op->name);
  if (!u0) return false;
  const int stride = u0->stride;
  const bool lifted = hyper_inputs(*u0, first.attrs);
  std::vector<std::string> lr_s, wd_s;
  std::vector<int> hyper_arrays;
  for (int m : members) {
    const Node& n = t.nodes[m];
    const UpdateOp* u = update_op(n.op->name);
    const size_t nw = update_weights(*u, n);
    std::vector<float> lrs, wds;
    if (!per_weight_values(*u, n.attrs, nw, &lrs, &wds)) return false;
    for (float v : lrs) lr_s.push_back(exact_float(v));
    for (float v : wds) wd_s.push_back(exact_float(v));
    unit->in.insert(unit->in.end(), n.in.begin(), n.in.begin() + nw * stride);
    if (lifted) hyper_arrays.insert(hyper_arrays.end(), n.in.begin() + nw * stride, n.in.end());
    unit->out.insert(unit->out.end(), n.out.begin(), n.out.end());
  }
  unit->in.insert(unit->in.end(), hyper_arrays.begin(), hyper_arrays.end());
  unit->op = u0->kernel;
  // In place when every new weight is read by nothing else and only goes back into the
  // weight array it was computed from (an external input: a graph variable MXNet can mutate).
  unit->in_place = true;
  for (size_t k = 0; k < unit->out.size() && unit->in_place; ++k) {
    const int w = unit->in[stride * k], nw = unit->out[k];
    unit->in_place = t.values[w].node < 0 && written_into[nw] == w && !used_outside[nw];
  }
  unit->attrs = {{"num_weights", std::to_string(unit->out.size())}};
  if (lifted) {
    unit->attrs.push_back({"hyper_inputs", "1"});
  } else {
    unit->attrs.push_back({"lrs", tuple_of(lr_s)});
    unit->attrs.push_back({"wds", tuple_of(wd_s)});
  }
  for (auto& a : shared_attrs(*u0, first.attrs, lifted)) unit->attrs.push_back(std::move(a));
  if (unit->in_place) unit->attrs.push_back({"weights_in_place", "1"});
  return true;
}

}  // namespace minpy
