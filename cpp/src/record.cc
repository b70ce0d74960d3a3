// The interceptor: one MXNet op call becomes trace nodes. MXNet calls it in
// place of _imperative_invoke for every op while a jit() scope is open.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "failures.h"
#include "mxapi.h"
#include "mxparse.h"
#include "parts.h"
#include "rewrite.h"
#include "runtime.h"
#include "updates.h"

namespace minpy {

// Ops whose result does not depend on MXNet's training flag (OpContext::is_train): optimizer
// updates, our kernels, and elementwise arithmetic. A graph runs every node under one flag,
// so only these may follow a backward node recorded under the other one (an update after
// `with autograd.record():` runs in predict mode, its forward in train mode). Others
// (Dropout, BatchNorm, and oneDNN ops that pick a primitive by the flag) cut the trace.
bool runs_alike_in_both_modes(const OpInfo& op) {  // decided once per op: OpInfo::mode_independent
  static const std::unordered_set<std::string> elementwise = {
      "_copy", "Cast", "zeros_like", "ones_like", "_mul_scalar", "_plus_scalar", "_minus_scalar",
      "_rminus_scalar", "_div_scalar", "_rdiv_scalar", "_power_scalar", "_rpower_scalar", "_maximum_scalar",
      "_minimum_scalar", "elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_plus", "_add",
      "_minus", "_sub", "_mul", "_div", "_power", "_maximum", "_minimum", "broadcast_add", "broadcast_plus",
      "broadcast_sub", "broadcast_minus", "broadcast_mul", "broadcast_div", "broadcast_maximum",
      "broadcast_minimum", "square", "sqrt", "rsqrt", "abs", "sign", "negative", "reciprocal", "clip",
      "where", "sum", "mean", "norm", "_npi_multiply_scalar", "_npi_add_scalar", "_npi_subtract_scalar",
      "_npi_rsubtract_scalar", "_npi_true_divide_scalar", "_npi_rtrue_divide_scalar", "_npi_add", "_npi_subtract",
      "_npi_multiply", "_npi_true_divide", "_npi_square", "_npi_sqrt", "_npi_absolute", "_npi_negative",
      "_npi_reciprocal"};
  // MXNet's optimizer updates (signum_update, ftrl_update, lamb_update_phase1...): arithmetic
  // on their arrays and attributes, whatever the flag
  const std::string& n = op.name;
  const bool optimizer = (n.size() > 7 && n.compare(n.size() - 7, 7, "_update") == 0) ||
                         n.find("_update_phase") != std::string::npos;
  return op.update || op.ours || optimizer || elementwise.count(n) > 0;
}

// The samplers of mxnet.np.random / npx (`_npi_normal`, `_npx_dropout`, ...): their names say
// neither "random" nor "sample", but they draw from the generator eager code draws from.
bool numpy_sampler(const std::string& n) {
  static const std::unordered_set<std::string> names = {
      "_npi_bernoulli", "_npi_choice",      "_npi_exponential", "_npi_gamma",    "_npi_gumbel",
      "_npi_logistic",  "_npi_multinomial", "_npi_normal",      "_npi_normal_n", "_npi_pareto",
      "_npi_powerd",    "_npi_rayleigh",    "_npi_shuffle",     "_npi_uniform",  "_npi_uniform_n",
      "_npi_weibull",   "_npi_laplace",     "_npi_poisson",     "_npx_dropout"};
  return names.count(n) != 0;
}

OpInfo& op_info(AtomicSymbolCreator creator) {
  // Asked on every recorded call: a direct-mapped memo in front of the map (an OpInfo is
  // never freed, so a stale slot only misses).
  static std::atomic<OpInfo*> memo[128];
  std::atomic<OpInfo*>& m = memo[(reinterpret_cast<uintptr_t>(creator) >> 4) & 127];
  OpInfo* known = m.load(std::memory_order_relaxed);
  if (known && known->creator == creator) return *known;
  auto it = R->ops.find(creator);
  if (it != R->ops.end()) {
    m.store(it->second.get(), std::memory_order_relaxed);
    return *it->second;
  }
  auto info = std::make_unique<OpInfo>();
  info->creator = creator;
  info->name = op_name_of(creator);
  info->hash = hash_bytes(info->name.data(), info->name.size());
  const char *name, *desc, *key_var = nullptr, *ret = nullptr;
  uint32_t nargs = 0;
  const char **arg_names, **arg_types, **arg_descs;
  if (MXSymbolGetAtomicSymbolInfo(creator, &name, &desc, &nargs, &arg_names, &arg_types, &arg_descs, &key_var, &ret) ==
          0 &&
      key_var)
    info->var_num_args = key_var;
  info->lift = liftable_attr(info->name);
  const std::string& n = info->name;
  // Random draws must keep program order; Custom ops (debug_print) may have side effects.
  info->effectful = n == "Custom" || n == "Dropout" || n == "_shuffle" || n == "RNN" ||
                    n.find("random") != std::string::npos || n.find("sample") != std::string::npos ||
                    numpy_sampler(n);
  info->expands = needs_expansion(n);
  info->update = update_op(n);
  info->multi_weight_update = info->update && n.find("multi_") != std::string::npos;
  info->can_fail = op_can_fail(n);
  info->fail_rule = fail_rule(n);
  // Composing reset_arrays segfaults inside nnvm; the multi-tensor optimizer ops other than
  // multi_sgd_* lack symbolic inference.
  info->no_symbolic_form = n == "reset_arrays" || (n.rfind("multi_", 0) == 0 && !info->expands) ||
                           n.rfind("_multi_", 0) == 0 || n.rfind("preloaded_multi_", 0) == 0;
  info->sparse_output = n.find("sparse") != std::string::npos;  // cast_storage is decided per call
  info->ours = n.rfind("_minpy_", 0) == 0;
  info->zero_grad_inputs = zero_gradient_inputs(n);
  info->mode_independent = runs_alike_in_both_modes(*info);
  info->copyto = n == "_copyto";
  info->rnn = n == "RNN";
  info->activation = n == "Activation";
  info->batch_norm = is_batch_norm(n);
  info->batch_norm_data = n == "BatchNorm" || n == "_npx_batch_norm";
  for (int i = 0; i < 4 && !info->view_inputs_can_fail; ++i) info->view_inputs_can_fail = view_input_can_fail(n, i);
  return *(R->ops[creator] = std::move(info));
}

// The arrays of an `out=` argument (one array or a sequence), borrowed from `out`.
std::vector<PyObject*> out_arrays(PyObject* out) {
  std::vector<PyObject*> arrays;
  if (out == Py_None) return arrays;
  if (is_ndarray(out) || !PySequence_Check(out) || PyObject_HasAttrString(out, "handle")) return {out};
  for (Py_ssize_t i = 0, n = PySequence_Size(out); i < n; ++i) {
    PyObject* o = PySequence_GetItem(out, i);
    arrays.push_back(o);
    Py_DECREF(o);  // still referenced by `out`
  }
  return arrays;
}

// A long trace is flushed in segments so that MXNet runs one segment while Python records
// the next. A segment of at least segment_ops ops ends after an op like the one that ended
// the previous segment (or like the scope's first op). In a loop the cuts then fall at the
// same place in every iteration and the segments repeat: they hit the cache instead of
// compiling anew. Without such an op the segment ends at twice segment_ops.
// Not a trace recorded under autograd: a segment flushed before its backward is known runs with
// each op its own autograd node, unfused (flush.cc, parts_recorded_per_op), where the whole
// trace, flushed at backward(), runs as one graph with its gradient.
bool segment_due(const ThreadState& ts) {
  const size_t every = R->cfg.segment_ops, n = ts.trace.nodes.size();
  if (every == 0 || n < every || ts.capturing) return false;  // a fragment capture is one unit
  if (ts.trace.runs_recorded()) return false;
  if (n >= 2 * every) return true;
  const uint64_t anchor = ts.segment_anchor ? ts.segment_anchor : ts.trace.nodes.front().content;
  return ts.trace.nodes.back().content == anchor;
}

// BatchNorm's gamma has one element per channel of data (axis `axis`, default 1).
bool gamma_matches_channels(const AVal& data, const AVal& gamma, const std::vector<Attr>& attrs) {
  int axis = std::atoi(attr_value(attrs, "axis", "1").c_str());
  if (axis < 0) axis += data.ndim;
  if (axis < 0 || axis >= data.ndim) return false;
  return gamma.size() == data.dims[axis];
}

// An existing array now holds `value` (an out= target, or an input an op writes in place).
void write_into(Trace& t, PyObject* array, int value) {
  NDArrayHandle h = t.canonical(handle_of(array));
  const Value& val = t.values[value];
  if (val.node >= 0) {  // remembered for eager replay, which must write where eager MXNet writes
    Node& producer = t.nodes[val.node];
    producer.targets.resize(producer.out.size(), nullptr);
    producer.targets[val.index] = h;
  }
  auto it = t.slots.find(h);
  if (it == t.slots.end()) {
    t.bind(h, value, false, array);
    Py_INCREF(array);
  } else {
    t.rebind(it->second, h, value);
  }
}

// The arrays a call returns: out= arrays rebound to the new values, or new lazy arrays.
py::object bind_results(ThreadState& ts, const std::vector<int>& outs, const std::vector<PyObject*>& out_objs,
                        PyObject* out, bool is_np, bool as_list) {
  Trace& t = ts.trace;
  py::object result;
  if (!out_objs.empty()) {
    for (size_t i = 0; i < out_objs.size(); ++i) write_into(t, out_objs[i], outs[i]);
    result = py::reinterpret_borrow<py::object>(out);
  } else {
    size_t n = outs.size();
    py::list lst(as_list || n != 1 ? n : 0);
    for (size_t i = 0; i < n; ++i) {
      NDArrayHandle h = nullptr;
      PyObject* obj = make_lazy(t.values[outs[i]].aval, is_np, &h);  // new ref: the slot's
      t.bind(h, outs[i], true, obj);
      if (!as_list && n == 1) {
        result = py::reinterpret_borrow<py::object>(obj);
      } else {
        PyList_SET_ITEM(lst.ptr(), i, obj);
        Py_INCREF(obj);
      }
    }
    if (as_list || n != 1) result = lst;
  }
  if (t.nodes.size() >= R->cfg.max_ops) {
    flush_thread(ts, "op count cap", user_site());
  } else if (segment_due(ts)) {
    uint64_t last = t.nodes.back().content;
    flush_thread(ts, "segment", user_site());
    ts.segment_anchor = last;
  }
  return result;
}

uint64_t hash_str(const std::string& s) { return hash_bytes(s.data(), s.size()); }

// Appends a node whose signature is known; its source line is captured only at a
// structurally new position (the only ones a printout or miss explanation shows).
int append_node(ThreadState& ts, OpInfo& op, std::vector<Attr>&& attrs, uint64_t attr_hash,
                const std::vector<int>& in, const OpSignature& sig) {
  Trace& t = ts.trace;
  int first = t.add_node(&op, std::move(attrs), attr_hash, in, sig.outs, sig.mutable_inputs, -1);
  if (R->cfg.track_source && (ts.capturing || !R->seen_positions.count(t.nodes.back().position)))
    t.nodes.back().loc = R->sources.capture();
  ++R->stats.ops_recorded;
  ++R->pending;
  return first;
}

// Records the nodes of an expansion (lifted scalars, per-weight updates, copyto) into the trace.
struct TraceEmitter : Emitter {
  ThreadState& ts;
  explicit TraceEmitter(ThreadState& t) : ts(t) {}

  int node(const std::string& name, std::vector<Attr> attrs, std::vector<int> in) override {
    AtomicSymbolCreator creator = nullptr;
    MX_CALL(NNGetOpHandle(name.c_str(), &creator));
    OpInfo& op = op_info(creator);
    uint64_t h = hash_attrs(attrs);
    std::vector<const AVal*> avals;
    for (int v : in) avals.push_back(&ts.trace.values[v].aval);
    const OpSignature& sig = R->sigs.lookup(op, attrs, h, avals, ts.trace.np_shape);
    if (!sig.recordable) throw MXError("lifted form " + name + " is not recordable: " + sig.why_not);
    return append_node(ts, sig.fails_while_running && !op.can_fail ? failing_twin(op) : op, std::move(attrs), h, in,
                       sig);
  }

  int constant(double v, int like) override {
    AVal a = ts.trace.values[like].aval;
    union { float f; double d; int32_t i; int64_t l; } bits;
    size_t nbytes;
    switch (a.dtype) {
      case 0: bits.f = static_cast<float>(v); nbytes = 4; break;
      case 1: bits.d = v; nbytes = 8; break;
      case 4: bits.i = static_cast<int32_t>(v); nbytes = 4; break;
      case 6: bits.l = static_cast<int64_t>(v); nbytes = 8; break;
      default: return -1;  // float16 etc.: keep the attribute
    }
    for (int d = 0; d < a.ndim; ++d) a.dims[d] = 1;
    if (a.ndim == 0 && !ts.trace.np_shape) a.ndim = 1, a.dims[0] = 1;
    return one_element(a, &bits, nbytes);
  }

  int dtype(int value) override { return ts.trace.values[value].aval.dtype; }

  // A (n,) float32 array holding v[0..n), on the context of value `like` (an update's
  // learning rate, weight decay and rescale_grad).
  int float32_constant(const float* v, int n, int like) {
    AVal a = ts.trace.values[like].aval;
    a.ndim = 1, a.dims[0] = n, a.dtype = 0;
    return small_array(a, v, 4 * static_cast<size_t>(n), static_cast<size_t>(n));
  }

 private:
  int one_element(const AVal& a, const void* bits, size_t nbytes) { return small_array(a, bits, nbytes, 1); }

  // A small array made for this trace (freed after its flush), one per value.
  int small_array(const AVal& a, const void* bits, size_t nbytes, size_t count) {
    Trace& t = ts.trace;
    uint64_t k = mix64(hash_aval(a) ^ hash_bytes(bits, nbytes));
    auto it = t.constants.find(k);
    if (it != t.constants.end()) return it->second;
    NDArrayHandle h = new_lazy_array(a);
    t.owned.push_back(h);
    if (a.dev_type == kCPU) {
      fill_new_array(h, a.dev_type, bits, nbytes, count);  // a memcpy into the new array
    } else {
      // A copy that waits for MXNet's engine, whose worker may be calling Python (a CustomOp's
      // state being freed): not with the GIL held. The trace is safe meanwhile: ts.busy is set.
      py::gil_scoped_release nogil;
      fill_new_array(h, a.dev_type, bits, nbytes, count);
    }
    int id = t.value_of(h, &a, nullptr);
    t.constants[k] = id;
    return id;
  }
};

// An optimizer update recorded as our multi-tensor kernel (updates.h): MXNet's multi-tensor
// ops, which have no graph form, and any update whose learning rate, weight decay or
// rescale_grad changes, which then arrive as a (3,) input array per weight so that the graph
// stays the same. Rewrites the attributes and inputs; null (nothing changed) when the kernel
// cannot run the call.
OpInfo* as_update_kernel(ThreadState& ts, OpInfo& op, bool hot, uint64_t attr_hash, std::vector<Attr>* attrs,
                         std::vector<int>* in) {
  Trace& t = ts.trace;
  if (R->kernels.empty() || !R->cfg.fuse || t.runs_recorded()) return nullptr;
  const UpdateOp& u = *op.update;
  const size_t stride = static_cast<size_t>(update_stride(u));
  if (in->empty() || in->size() % stride || !update_kernel_fits(u, t, *in)) return nullptr;
  if (!op.kernel_twin) {
    OpHandle h = nullptr;
    if (NNGetOpHandle(update_kernel(u).c_str(), &h) != 0 || !h) return nullptr;
    op.kernel_twin = &op_info(reinterpret_cast<AtomicSymbolCreator>(h));
  }
  // The attributes' translation, remembered: the updates of a step repeat one set of
  // attributes (a per-step learning rate included), so all but the first call skip it.
  struct Translation {
    uint64_t key = 0;
    bool ok = false;
    std::vector<float> hyper;  // lifted: lr, wd, rescale_grad per weight
    std::vector<Attr> attrs;
  };
  static Translation memo[16];  // the GIL is held: no other thread is in here
  const size_t nw = in->size() / stride;
  const uint64_t key = mix64(mix64(attr_hash ^ op.hash) ^ (nw << 1 | (hot ? 1 : 0)));
  Translation& tr = memo[key & 15];
  if (tr.key != key) {
    tr.key = key;
    tr.hyper.clear();
    tr.ok = kernel_call_attrs(u, *attrs, nw, hot ? &tr.hyper : nullptr, &tr.attrs);
  }
  if (!tr.ok) return nullptr;
  TraceEmitter em(ts);
  for (size_t k = 0; k < tr.hyper.size(); k += 3) in->push_back(em.float32_constant(&tr.hyper[k], 3, (*in)[0]));
  *attrs = tr.attrs;
  return op.kernel_twin;
}

// s == lit, the length compared first (asked of every attribute of every call).
template <size_t N>
bool is_text(const std::string& s, const char (&lit)[N]) {
  return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

// Whether attribute `attr` of this call has been seen with another value at the same place.
bool attr_is_hot(ThreadState& ts, const OpInfo& op, const char* attr, uint64_t attr_salt,
                 const std::vector<Attr>& attrs) {
  const std::string* val = nullptr;
  const size_t attr_len = std::strlen(attr);
  for (const auto& a : attrs)
    if (a.key.size() == attr_len && a.key.compare(attr) == 0) val = &a.val;
  if (!val) return false;
  // Optimizer updates: one decision per op for the whole scope site, whatever the position,
  // so that the updates of one step are lifted alike and stay one kernel call; a list of
  // learning rates (multi_sgd_update's lrs) counts item by item. A weight with its own
  // lr_mult makes the op hot at once: lifting costs an input array, not a graph.
  // Other ops (never under record(): see record_call) by their position in the trace.
  uint64_t site = mix64(ts.site_hash ^ op.hash ^ attr_salt);
  if (!op.update) site = mix64(site ^ ts.trace.user_ops_hash);
  // Asked for every scalar op: a direct-mapped memo in front of the map, whose entries are
  // never erased (the GIL is held: no other thread is in here).
  struct Memo {
    uint64_t site = 0;
    Runtime::ScalarSite* s = nullptr;
  };
  static Memo memo[256];
  Memo& m = memo[(site ^ (site >> 32)) & 255];
  if (!m.s || m.site != site) m = Memo{site, &R->scalar_sites[site]};
  auto& s = *m.s;
  if (s.hot) return true;
  auto see = [&](const std::string& v) {
    if (s.first.empty()) s.first = v;
    else if (s.first != v) s.hot = true;
  };
  if (op.update && !val->empty() && (val->front() == '(' || val->front() == '[')) {
    std::string item;
    for (char c : *val) {
      if (c == ',' || c == ')' || c == ']') {
        if (!item.empty()) see(item);
        item.clear();
      } else if (c != ' ' && c != '(' && c != '[') {
        item += c;
      }
    }
  } else {
    see(*val);
  }
  return s.hot;
}

// Whether this call's liftable attribute has changed at its place. An optimizer update is
// lifted when its learning rate, weight decay or rescale_grad changes (an lr schedule; a
// weight-decay schedule; Trainer.step(batch_size) with the last, smaller batch of an epoch):
// all three then arrive as input arrays (as_update_kernel). Every attribute is looked at, so
// that each site remembers its first value.
bool is_hot(ThreadState& ts, const OpInfo& op, const char* attr, const std::vector<Attr>& attrs) {
  if (!op.update) return attr_is_hot(ts, op, attr, 0, attrs);
  const bool lists = std::strcmp(attr, "lrs") == 0;  // the multi-tensor ops: lrs=, wds= lists
  bool hot = attr_is_hot(ts, op, attr, 0, attrs);
  hot = attr_is_hot(ts, op, lists ? "wds" : "wd", 0x9e3779b97f4a7c15ull, attrs) || hot;
  hot = attr_is_hot(ts, op, "rescale_grad", 0xc2b2ae3d27d4eb4full, attrs) || hot;
  return hot;
}

// Eager MXNet's autograd bookkeeping for an op called under record() (Imperative::RecordOp,
// after the op has run): it refuses to write an array already in the autograd graph; it
// records the op only if an input is in the graph -- the inputs and outputs then join it --
// and refuses an output that was one of those inputs (in-place updates). A trace segment
// holds ops of one kind only, run as a recorded graph or not, so every array ends up in
// the autograd state eager gives it; a refused op runs eagerly, where MXNet raises its error.
struct GraphCheck {
  bool joins = false;
  const char* refused = nullptr;
};

// The `ndargs` and `out` arrays of a call, as handles.
void call_arrays(PyObject* ndargs, PyObject* out, std::vector<NDArrayHandle>* ins, std::vector<NDArrayHandle>* targets) {
  for (Py_ssize_t i = 0, n = PySequence_Size(ndargs); i < n; ++i) {
    py::object a = py::reinterpret_steal<py::object>(PySequence_GetItem(ndargs, i));
    ins->push_back(handle_of(a.ptr()));
  }
  for (PyObject* o : out_arrays(out)) targets->push_back(handle_of(o));
}

// In the graph once the pending work has run: a lazy output of a recorded segment, an array a
// recorded op of the segment used, or one MXNet already has in its graph.
bool in_graph(const Trace& t, NDArrayHandle h) {
  auto it = t.slots.find(h);
  if (it != t.slots.end() && (it->second.in_graph || (it->second.ours && t.runs_recorded()))) return true;
  return in_autograd_graph(h);
}

GraphCheck graph_check(const Trace& t, PyObject* ndargs, PyObject* out) {
  std::vector<NDArrayHandle> ins, targets;
  call_arrays(ndargs, out, &ins, &targets);
  GraphCheck c;
  for (NDArrayHandle h : targets)
    if (in_graph(t, h)) {
      c.refused = "under autograd.record(), writes an array that is already in the autograd graph";
      return c;
    }
  c.joins = std::any_of(ins.begin(), ins.end(), [&](NDArrayHandle h) { return in_graph(t, h); });
  if (c.joins)
    for (NDArrayHandle h : targets)
      if (std::find(ins.begin(), ins.end(), h) != ins.end())
        c.refused = "under autograd.record(), updates one of its inputs in place";
  return c;
}

// Whether an out= array of the call holds a result of the pending recorded trace.
bool writes_pending_result(const Trace& t, PyObject* out) {
  if (!t.runs_recorded()) return false;
  for (PyObject* o : out_arrays(out)) {
    auto it = t.slots.find(handle_of(o));
    if (it != t.slots.end() && t.values[it->second.value].node >= 0) return true;
  }
  return false;
}

void mark_in_graph(Trace& t, PyObject* ndargs, PyObject* out) {
  std::vector<NDArrayHandle> ins, targets;
  call_arrays(ndargs, out, &ins, &targets);
  for (const auto* hs : {&ins, &targets})
    for (NDArrayHandle h : *hs) {
      auto it = t.slots.find(h);
      if (it != t.slots.end()) it->second.in_graph = true;
    }
}

// The arguments of one intercepted call, _imperative_invoke(handle, ndargs, keys, vals, out,
// is_np_op, output_is_list), borrowed from the caller: the vectorcall path reads them where
// Python left them instead of packing a tuple for each op.
struct CallArgs {
  PyObject* const* argv;
  static constexpr size_t kCount = 7;
  py::handle operator[](size_t i) const { return argv[i]; }
  // fn(*args)
  py::object call(const py::object& fn) const {
    PyObject* r = PyObject_Vectorcall(fn.ptr(), argv, kCount, nullptr);
    if (!r) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(r);
  }
  py::args tuple() const {
    py::tuple t(kCount);
    for (size_t i = 0; i < kCount; ++i) {
      Py_INCREF(argv[i]);
      PyTuple_SET_ITEM(t.ptr(), i, argv[i]);
    }
    return py::reinterpret_borrow<py::args>(t);
  }
};

py::object record_call(ThreadState& ts, const CallArgs& args);
py::object fallback(const CallArgs& args, const OpInfo& op, const std::string& why);  // below

// A vector for one recorded call's own bookkeeping whose storage is reused from call to call
// (the record path made a heap allocation for each of these on every op). Each instance takes
// a vector of its own from a pool, so a nested record_call (flush_and_retry) gets another one.
// The pool is guarded by the GIL: record_call holds it wherever it takes or returns one.
template <class T>
class ScratchVector {
 public:
  explicit ScratchVector(size_t n) {
    auto& p = pool();
    if (!p.empty()) {
      v_ = std::move(p.back());
      p.pop_back();
    }
    v_.assign(n, T());
  }
  ~ScratchVector() {
    auto& p = pool();
    if (v_.capacity() <= 64 && p.size() < 8) p.push_back(std::move(v_));
  }
  ScratchVector(const ScratchVector&) = delete;
  ScratchVector& operator=(const ScratchVector&) = delete;
  std::vector<T>& get() { return v_; }

 private:
  static std::vector<std::vector<T>>& pool() {
    static std::vector<std::vector<T>> p;
    return p;
  }
  std::vector<T> v_;
};


// One graph, one context: a CachedOp runs every node of its graph on the device of its inputs.
// A thread keeps one open trace per context (ThreadState::parked): an op on another context
// than the current trace's continues that context's trace, or opens one, and the other traces
// stay pending. Data-parallel code records each context's forward in turn, then calls each
// loss's backward(): every context's forward is still pending when its backward comes, so each
// runs with its backward as one graph (backward.cc), and a flush runs them all. Recorded ops
// never mix contexts: an op whose inputs do, or a copy between contexts, runs eagerly.


// The context an op runs on: its first input's, or its `ctx` attribute's (cpu(0) if none).
void op_context(const Trace& t, PyObject* ndargs, PyObject* keys, PyObject* vals, int* dev_type, int* dev_id) {
  *dev_type = 1, *dev_id = 0;
  Py_ssize_t nin = PySequence_Size(ndargs);
  if (nin > 0) {
    py::object arr = py::reinterpret_steal<py::object>(PySequence_GetItem(ndargs, 0));
    if (!arr) throw py::error_already_set();
    NDArrayHandle h = handle_of(arr.ptr());
    auto it = t.slots.find(h);
    AVal peeked;  // what MXNDArrayGetContext reads (NDArray::ctx), without a C API call
    if (it != t.slots.end()) {
      const AVal& a = t.values[it->second.value].aval;
      *dev_type = a.dev_type, *dev_id = a.dev_id;
    } else if (peek_works() && peek_aval(h, &peeked)) {
      *dev_type = peeked.dev_type, *dev_id = peeked.dev_id;
    } else if (MXNDArrayGetContext(h, dev_type, dev_id) != 0) {  // a lazy array knows its context too
      throw mxnet_failure();
    }
    return;
  }
  std::vector<Attr> ctx;
  for (Py_ssize_t i = 0, n = PySequence_Size(keys); i < n; ++i) {
    py::object k = py::reinterpret_steal<py::object>(PySequence_GetItem(keys, i));
    if (!k) throw py::error_already_set();
    if (PyUnicode_Check(k.ptr()) && PyUnicode_CompareWithASCIIString(k.ptr(), "ctx") == 0) {
      py::object v = py::reinterpret_steal<py::object>(PySequence_GetItem(vals, i));
      if (!v) throw py::error_already_set();
      ctx.push_back({"ctx", str_of(v.ptr())});
    }
  }
  parse_ctx_attr(ctx, dev_type, dev_id);
}

// The context of a non-empty trace's ops (that of its last result).
bool trace_context(const Trace& t, int* dev_type, int* dev_id) {
  if (t.nodes.empty() || t.nodes.back().out.empty()) return false;
  const AVal& a = t.values[t.nodes.back().out[0]].aval;
  *dev_type = a.dev_type, *dev_id = a.dev_id;
  return true;
}

// Whether any of these arrays is pending in a parked trace: then no trace may read or write it
// but its own, and everything runs first.
bool touches_parked(const ThreadState& ts, PyObject* ndargs, PyObject* out) {
  std::vector<PyObject*> arrays = out_arrays(out);
  for (Py_ssize_t i = 0, n = PySequence_Size(ndargs); i < n; ++i) {
    PyObject* a = PySequence_GetItem(ndargs, i);
    if (!a) throw py::error_already_set();
    arrays.push_back(a);
    Py_DECREF(a);  // still referenced by `ndargs`
  }
  for (PyObject* a : arrays) {
    if (!is_ndarray(a)) continue;
    NDArrayHandle h = handle_of(a);
    for (const Trace& p : ts.parked)
      if (p.slots.count(p.canonical(h))) return true;
  }
  return false;
}

// Makes the trace of the op's context current (parking the current one), or flushes the
// thread's traces where they may not stay apart.
void enter_context_trace(ThreadState& ts, PyObject* ndargs, PyObject* keys, PyObject* vals, PyObject* out,
                         bool effectful) {
  int dev_type = 1, dev_id = 0, now_type = 0, now_id = 0;
  op_context(ts.trace, ndargs, keys, vals, &dev_type, &dev_id);
  const bool open = trace_context(ts.trace, &now_type, &now_id);
  // Pinned and shared host memory: an op reading it puts its results on cpu, so its trace would
  // not be told apart from cpu's (and a kvstore's arrays live there): one trace, flushed.
  // A @function capture records into one trace.
  const bool parks = ts.capturing == 0 && (dev_type == kCPU || dev_type == kGPU) &&
                     (!open || now_type == kCPU || now_type == kGPU);
  if (!parks) {
    if ((open && (dev_type != now_type || dev_id != now_id)) || !ts.parked.empty())
      flush_thread(ts, "context switch", user_site());
    return;
  }
  if (!open || dev_type != now_type || dev_id != now_id) {
    auto it = std::find_if(ts.parked.begin(), ts.parked.end(), [&](const Trace& p) {
      int pt = 0, pi = 0;
      return trace_context(p, &pt, &pi) && pt == dev_type && pi == dev_id;
    });
    if (it != ts.parked.end()) {
      if (open) {
        std::swap(ts.trace, *it);
      } else {
        ts.trace = std::move(*it);
        ts.parked.erase(it);
      }
      ++R->stats.context_switches;
    } else if (open) {
      ts.parked.push_back(std::move(ts.trace));
      ts.trace = Trace();
      ++R->stats.context_switches;
    }
  }
  if (ts.parked.empty()) return;
  // An array pending in another context's trace is read or written only by that trace; and
  // random draws keep program order across contexts (MXNet's CPU contexts share one generator),
  // so at most one trace holds ops with effects, and the order traces run in never matters.
  auto has_effects = [](const Trace& p) {
    return std::any_of(p.nodes.begin(), p.nodes.end(), [](const Node& n) { return n.op->effectful; });
  };
  if (touches_parked(ts, ndargs, out) || (effectful && std::any_of(ts.parked.begin(), ts.parked.end(), has_effects)))
    flush_thread(ts, "context switch", user_site());
}

// A BatchNorm that MXNet runs (a fallback) under autograd.record() on 2-d data that may be a
// oneDNN-layout concat result: its backward may fail, so the gradients of its inputs are watched.
void watch_batch_norm_gradients(const Trace& t, const OpInfo& op, PyObject* ndargs) {
  const Py_ssize_t n = PySequence_Size(ndargs);
  if (n < 1) {
    PyErr_Clear();
    return;
  }
  std::vector<NDArrayHandle> handles;
  for (Py_ssize_t i = 0; i < n; ++i) {
    py::object a = py::reinterpret_steal<py::object>(PySequence_GetItem(ndargs, i));
    if (!a || !is_ndarray(a.ptr())) {
      PyErr_Clear();
      return;
    }
    handles.push_back(handle_of(a.ptr()));
  }
  auto it = t.slots.find(t.canonical(handles[0]));
  bool may_fail = false;
  if (it != t.slots.end()) {
    may_fail = batch_norm_backward_can_fail(t, op.name, it->second.value);
  } else if (may_be_onednn_concat_result(handles[0])) {
    int ndim = 0;
    const int* dims = nullptr;
    may_fail = MXNDArrayGetShapeEx(handles[0], &ndim, &dims) == 0 && ndim == 2;
  }
  if (may_fail) watch_gradients(handles);
}

// An optimizer update whose arrays sit in CPU memory of several contexts or in pinned memory --
// a local kvstore's stored weights on cpu_pinned(0) with its reduced gradients on cpu(k) or
// cpu_pinned(0), as kvstore_updates.py hands them to the Updater -- cannot be a graph (a graph
// holds one context, and an expanded update's results would land on cpu), but our kernel only
// reads memory: launched directly (update_launch.h) when nothing is recorded before it, which
// is where eager MXNet's op would run, in place, with the same arithmetic. Never a GPU array
// (our kernels are CPU code). False: nothing done, the caller falls back.
bool launch_cpu_memory_update(ThreadState& ts, const OpInfo& op, const std::vector<Attr>& attrs,
                              const std::vector<PyObject*>& in_objs, const std::vector<const AVal*>& avals,
                              PyObject* out) {
  if (R->kernels.empty() || !R->cfg.fuse || ts.trace.runs_recorded()) return false;
  const UpdateOp& u = *op.update;
  const size_t stride = static_cast<size_t>(update_stride(u)), n = in_objs.size();
  if (!update_arrays_in_cpu_memory_fit(u, avals)) return false;
  const size_t nw = n / stride;
  DirectUpdate d;
  for (size_t k = 0; k < n; ++k) d.arrays.push_back(handle_of(in_objs[k]));
  for (size_t k = 0; k < n; k += stride) d.sizes.push_back(static_cast<int64_t>(avals[k]->size()));
  // out= the weights themselves (the Updater's call): the kernel updates them in place
  const std::vector<PyObject*> outs = out_arrays(out);
  if (outs.size() != nw) return false;
  for (size_t w = 0; w < nw; ++w)
    if (!same_array(handle_of(outs[w]), d.arrays[w * stride])) return false;
  if (!direct_update_of(u, attrs, nw, &d)) return false;
  d.dev_id = avals[0]->dev_id;  // the engine runs it on the first weight's CPU worker
  if (!launch_update_directly(ts, d)) return false;
  ++R->stats.trainer_direct;
  return true;
}

// What MXNet's _imperative_invoke returns for a call given out=: the out object itself.
py::object out_result(const CallArgs& args) { return py::reinterpret_borrow<py::object>(args[4]); }

// Runs the call through MXNet's own imperative path (after flushing), counted by op and reason.
py::object fallback(const CallArgs& args, const OpInfo& op, const std::string& why) {
  ++R->stats.fallbacks[op.name];
  ++R->stats.fallback_reasons[op.name + ": " + why];
  flush_all("eager op " + op.name);
  return args.call(R->orig_invoke);
}

// A fallback whose op may fail while it runs: its results are probed, so that a later trace
// reading one runs op by op until the probe has seen it clean (failures.h), as after a per-op run.
// `updated`: the inputs the op updates in place (its auxiliary states), probed too.
py::object fallback_that_can_fail(const CallArgs& args, const OpInfo& op, const std::string& why,
                                  const std::vector<int>& updated = {}) {
  py::object result = fallback(args, op, why);
  std::vector<NDArrayHandle> written;
  std::vector<PyObject*> arrays = out_arrays(args[4].ptr());
  if (arrays.empty()) arrays = out_arrays(result.ptr());
  for (int i : updated) {
    py::object a = py::reinterpret_steal<py::object>(PySequence_GetItem(args[1].ptr(), i));
    if (!a) PyErr_Clear();
    else arrays.push_back(a.ptr());  // held by the call's argument list
  }
  for (PyObject* a : arrays)
    if (is_ndarray(a)) written.push_back(handle_of(a));
  probe_arrays(written);
  return result;
}

// A call that needs one of its inputs materialised first: flush, then record it again.
py::object flush_and_retry(ThreadState& ts, const OpInfo& op, const CallArgs& args) {
  flush_thread(ts, "in-place update of a pending array by " + op.name, user_site());
  return record_call(ts, args);
}

// An attribute value as MXNet's ctypes layer would pass it (str(v)). Ints, bools and
// floats -- nearly every attribute of a training step -- skip Python's str(); a float's
// repr (a shortest round-trip conversion, ~150 ns) is remembered per bit pattern.
std::string str_of(PyObject* v) {
  if (PyUnicode_Check(v)) {
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(v, &n);
    if (!s) throw py::error_already_set();
    return std::string(s, n);
  }
  if (PyBool_Check(v)) return v == Py_True ? "True" : "False";
  if (PyLong_CheckExact(v)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow && !(x == -1 && PyErr_Occurred())) return std::to_string(x);
    PyErr_Clear();
  }
  struct FloatRepr {
    uint64_t bits = 0;
    bool set = false;
    std::string text;
  };
  static FloatRepr float_reprs[64];  // the GIL is held: no other thread is in here
  uint64_t bits = 0;
  FloatRepr* slot = nullptr;
  if (PyFloat_CheckExact(v)) {
    double d = PyFloat_AS_DOUBLE(v);
    std::memcpy(&bits, &d, sizeof bits);
    slot = &float_reprs[mix64(bits) & 63];
    if (slot->set && slot->bits == bits) return slot->text;
  }
  PyObject* s = PyObject_Str(v);
  if (!s) throw py::error_already_set();
  Py_ssize_t n;
  const char* c = PyUnicode_AsUTF8AndSize(s, &n);
  std::string out(c, n);
  Py_DECREF(s);
  if (slot) *slot = FloatRepr{bits, true, out};
  return out;
}


py::object invoke_call(const CallArgs& args) {
  ThreadState& ts = me();
  if (ts.flushing) wait_for_foreign_flush(ts);  // this thread's ops come after its pending ones
  raise_foreign_flush_error(ts);
  if (ts.in_mxnet || ts.flushing) return run_from_callback(ts, args.tuple());
  if (ts.depth == 0) return foreign_thread(ts) ? run_from_callback(ts, args.tuple()) : args.call(R->orig_invoke);
  struct Busy {
    int& b;
    ~Busy() { --b; }
  } busy{++ts.busy};
  return record_call(ts, args);
}

py::object record_call_tuple(ThreadState& ts, PyObject* call) {
  return record_call(ts, CallArgs{&PyTuple_GET_ITEM(call, 0)});
}

py::object invoke(py::args args) {
  if (args.size() != CallArgs::kCount) return R->orig_invoke(*args);
  return invoke_call(CallArgs{&PyTuple_GET_ITEM(args.ptr(), 0)});
}

py::object record_call(ThreadState& ts, const CallArgs& args) {
  if (ts.site && ts.site->eager) {  // counted, so that stats() never looks like a clean run
    OpInfo& op = op_info(reinterpret_cast<AtomicSymbolCreator>(PyLong_AsVoidPtr(args[0].ptr())));
    // The site may have passed its limit in another thread's compile while this thread's ops
    // were pending (the guard on MXNet's C API does not flush inside invoke): they run first.
    return fallback(args, op, "its jit() site passed the recompile limit");
  }
  auto creator = reinterpret_cast<AtomicSymbolCreator>(PyLong_AsVoidPtr(args[0].ptr()));
  OpInfo& op = op_info(creator);
  PyObject* ndargs = args[1].ptr();
  PyObject* keys = args[2].ptr();
  PyObject* vals = args[3].ptr();
  PyObject* out = args[4].ptr();
  bool is_np = PyObject_IsTrue(args[5].ptr());
  bool as_list = PyObject_IsTrue(args[6].ptr());

  // Autograd and shape-semantics state are part of what is recorded.
  bool rec = false, train = false;
  MXAutogradIsRecording(&rec);
  MXAutogradIsTraining(&train);
  bool np_shape = np_shape_mode();
  // A per-weight optimizer update while nothing else is pending joins the thread's batch of
  // them (update_batch.h); any other call launches that batch first.
  if (op.update && !rec && !np_shape && gather_update(ts, op, args.argv)) return out_result(args);
  if (!ts.batch.empty()) push_update_batch(ts, "op after updates");
  if (ts.has_pending()) enter_context_trace(ts, ndargs, keys, vals, out, op.effectful);
  Trace& t = ts.trace;
  bool graph_op = rec;  // joins the autograd graph: the segment runs as a recorded graph
  if (rec && autograd_peek_works()) {
    const GraphCheck c = graph_check(t, args[1].ptr(), args[4].ptr());
    if (c.refused) {
      // MXNet runs the write and refuses only to record it; eager's recorded ops that keep that
      // array for their backward (a sigmoid keeps its output) then read the new data. A pending
      // result written so runs its trace op by op first, each op recorded by MXNet as eagerly.
      if (writes_pending_result(t, args[4].ptr()))
        flush_thread(ts, "eager op " + op.name + " writes a pending recorded result", user_site(), true);
      return fallback(args, op, c.refused);
    }
    graph_op = c.joins;
  }
  if (graph_op && R->nondiff.count(op.name))  // eager records it: a backward through it fails as eager's does
    return fallback(args, op, "has no gradient, under autograd.record()");
  // After a backward node (backward.cc keeps its trace open) come the ops of the update,
  // recorded with autograd off: they join the trace, which runs without autograd.
  const bool follows_backward = t.backward >= 0 && !rec && t.np_shape == np_shape &&
                                (t.training == train || op.mode_independent);
  if (!t.empty() && !follows_backward &&
      (t.backward >= 0 || t.recording != graph_op || t.training != train || t.np_shape != np_shape)) {
    const bool only_graph = t.training == train && t.np_shape == np_shape;
    flush_thread(ts, !only_graph ? "autograd state changed"
                     : graph_op  ? "autograd: op joins the gradient graph"
                                 : "autograd: op outside the gradient graph",
                 user_site());
  }
  if (t.empty()) t.start(graph_op, train, np_shape);
  struct MarkGraph {  // on success, the call's arrays are in the graph iff its segment is recorded
    Trace& t;
    const CallArgs& args;
    bool done = false;
    ~MarkGraph() {
      if (done && t.runs_recorded()) mark_in_graph(t, args[1].ptr(), args[4].ptr());
    }
  } mark{t, args};

  std::vector<Attr> attrs;
  Py_ssize_t nk = PyList_Check(keys) ? PyList_GET_SIZE(keys) : PySequence_Size(keys);
  attrs.reserve(nk);
  for (Py_ssize_t i = 0; i < nk; ++i) {
    py::object k = py::reinterpret_steal<py::object>(PySequence_GetItem(keys, i));
    py::object v = py::reinterpret_steal<py::object>(PySequence_GetItem(vals, i));
    attrs.push_back({str_of(k.ptr()), str_of(v.ptr())});
  }

  // Variadic ops (concat, stack, add_n): eager MXNet fills in the input count; so must we.
  Py_ssize_t nin = PySequence_Size(ndargs);
  if (!op.var_num_args.empty() &&
      std::none_of(attrs.begin(), attrs.end(), [&](const Attr& a) { return a.key == op.var_num_args; }))
    attrs.push_back({op.var_num_args, std::to_string(nin)});
  uint64_t attr_hash = hash_attrs(attrs);

  if (op.no_symbolic_form && !op.update) return fallback(args, op, "no symbolic form in MXNet 1.9.1");
  // Under NaiveEngine a failing op raises where it is called: so it must run there.
  if (op.can_fail && errors_are_synchronous()) return fallback(args, op, "fails where it is called (NaiveEngine)");

  // Lazy arrays are dense: ops that produce sparse storage run eagerly.
  // (cast_storage's `stype`, dot's `forward_stype` ask for it on dense inputs.)
  if (op.sparse_output || std::any_of(attrs.begin(), attrs.end(), [&](const Attr& a) {
        return (is_text(a.key, "forward_stype") || (is_text(a.key, "stype") && op.name == "cast_storage")) &&
               a.val != "default" && a.val != "None";
      })) {
    return fallback(args, op, "sparse output");
  }

  // oneDNN's RNN outside training keeps the weights its first forward read in its operator
  // state, and a compiled graph keeps that state from run to run: a later run with other
  // weights (the next evaluation after more training) gave the first run's results. Eager MXNet
  // makes a state per call. MXNet's op runs it, as eagerly.
  if (op.rnn && !train) return fallback(args, op, "outside training its state keeps its first weights");

  // BatchNorm with fix_gamma (its default) writes ones into its gamma input when it runs, a write
  // its signature does not declare: recorded below as gamma <- ones_like(gamma). Under record()
  // that write would make gamma the output of a recorded op (eager's autograd never sees it): eager.
  bool writes_ones_into_gamma = false;
  if (op.batch_norm && nin > 1) {
    writes_ones_into_gamma = true;
    for (const Attr& a : attrs)
      if (a.key == "fix_gamma") writes_ones_into_gamma = !(a.val == "False" || a.val == "false" || a.val == "0");
    if (writes_ones_into_gamma && t.runs_recorded()) {
      watch_batch_norm_gradients(t, op, ndargs);
      return fallback(args, op, "fix_gamma writes ones into gamma, under autograd.record()");
    }
  }

  // Inputs: the value each array holds now; new arrays become external inputs.
  ScratchVector<int> in_scratch(nin);
  ScratchVector<PyObject*> in_objs_scratch(nin);
  std::vector<int>& in = in_scratch.get();
  std::vector<PyObject*>& in_objs = in_objs_scratch.get();
  for (Py_ssize_t i = 0; i < nin; ++i) {
    PyObject* arr = PyList_Check(ndargs) ? PyList_GET_ITEM(ndargs, i) : nullptr;
    py::object hold;
    if (!arr) {
      hold = py::reinterpret_steal<py::object>(PySequence_GetItem(ndargs, i));
      arr = hold.ptr();
    }
    in_objs[i] = arr;
    NDArrayHandle h = t.canonical(handle_of(arr));
    auto it = t.slots.find(h);
    if (it != t.slots.end()) {
      in[i] = it->second.value;
      continue;
    }
    AVal peeked;  // one read of the object tells dense from sparse and gives the aval
    const bool known = peek_works() && peek_aval(h, &peeked);
    if (!known && stype_of(h) != 0) {
      return fallback(args, op, "sparse input");
    }
    // A gradient buffer of sparse storage: a graph's backward cannot write it (MXNet's imperative
    // backward falls back to dense kernels op by op), so ops reading the array run eagerly.
    if (t.runs_recorded() && has_sparse_grad(h)) return fallback(args, op, "sparse gradient buffer");
    Slot* slot = nullptr;
    in[i] = t.value_of(h, known ? &peeked : nullptr, &slot);
    Py_INCREF(arr);
    slot->owner = arr;
  }
  // An optimizer update handed a view of an array it updates (multi_sgd_mom_update whose
  // gradient is a slice of one of its weights): MXNet's kernel walks the weights element by
  // element, so it reads the view after writing some of it; our kernel or a graph reads it
  // before. MXNet's op runs it, as eagerly (the same array twice: update_with_repeated_input).
  if (op.update && chunk_identity_works()) {
    // storage -> the first array seen on it; a few inputs (a per-weight update) are compared
    // pairwise instead of building a map on every call
    bool reads_a_view = false;
    if (nin <= 8) {
      const void* chunks[8];
      NDArrayHandle handles[8];
      for (Py_ssize_t i = 0; i < nin && !reads_a_view; ++i) {
        handles[i] = handle_of(in_objs[i]);
        chunks[i] = chunk_of(handles[i]);
        if (!chunks[i]) continue;
        for (Py_ssize_t j = 0; j < i; ++j)
          if (chunks[j] == chunks[i]) {  // the first array seen on this storage
            reads_a_view = handles[j] != handles[i];
            break;
          }
      }
    } else {
      std::unordered_map<const void*, NDArrayHandle> first_on_chunk;
      for (Py_ssize_t i = 0; i < nin && !reads_a_view; ++i) {
        NDArrayHandle h = handle_of(in_objs[i]);
        const void* c = chunk_of(h);
        if (!c) continue;
        auto seen = first_on_chunk.emplace(c, h);
        reads_a_view = !seen.second && seen.first->second != h;
      }
    }
    if (reads_a_view) return fallback(args, op, "reads a view of an array it updates");
  }
  ScratchVector<const AVal*> in_avals_scratch(nin);
  std::vector<const AVal*>& in_avals = in_avals_scratch.get();
  for (Py_ssize_t i = 0; i < nin; ++i) in_avals[i] = &t.values[in[i]].aval;
  // Eager MXNet accepts inputs on different contexts of one device kind (cpu(0), cpu(1),
  // cpu_pinned(0)); a CachedOp wants all of its inputs on one context.
  for (Py_ssize_t i = 1; i < nin; ++i)
    if (in_avals[i]->dev_type != in_avals[0]->dev_type || in_avals[i]->dev_id != in_avals[0]->dev_id) {
      if (op.update && launch_cpu_memory_update(ts, op, attrs, in_objs, in_avals, out)) return out_result(args);
      return fallback(args, op, "inputs on different contexts");
    }

  // A view of an array oneDNN may have left in its layout, read by an op that fails on such a
  // view, or written by `_copyto` (failures.h): MXNet's op runs it, as eagerly. A view is always
  // an external input (making one flushes).
  // A copy to another context is MXNet's op anyway (below), not probed: its result is read by the
  // next graph on that context (a data-parallel step's batch slice), which would run op by op
  // whenever the copy had not run yet (README, Errors).
  auto a_view = [](NDArrayHandle h) { return !view_peek_works() || is_view(h); };
  std::vector<PyObject*> copy_targets;
  if (op.copyto && nin == 1) {
    copy_targets = out_arrays(out);
    for (PyObject* o : copy_targets) {
      const AVal target = is_ndarray(o) ? aval_of(handle_of(o)) : *in_avals[0];
      if (target.dev_type != in_avals[0]->dev_type || target.dev_id != in_avals[0]->dev_id) copy_targets.clear();
    }
  }
  const bool copy_here = !op.copyto || (nin == 1 && !copy_targets.empty());
  for (Py_ssize_t i = 0; i < nin && copy_here; ++i)
    if (op.view_inputs_can_fail && t.values[in[i]].node < 0 && in_avals[i]->dev_type != kGPU &&
        view_input_can_fail(op.name, static_cast<int>(i)) &&
        a_view(handle_of(in_objs[i])))
      return fallback_that_can_fail(args, op, "reads a view (MXNet's op fails on a view of a oneDNN-layout array)");
  // A view written: by `_copyto`, or by any other op through out= (MXNet's oneDNN ops fail while
  // they run into a view of an array left in oneDNN's layout, "Check failed: !is_view": a 4-d
  // concat's result, sliced, fuzz seed 10376385; which arrays oneDNN left so is not known here).
  // Optimizer updates (out= the weight, on the hot path of every step) have no oneDNN kernel.
  std::vector<PyObject*> written = copy_targets;  // empty unless a copy
  if (!op.copyto && !op.update && out != Py_None && nin > 0) written = out_arrays(out);
  for (PyObject* o : written)
    if (in_avals[0]->dev_type != kGPU && is_ndarray(o) && a_view(handle_of(o)))
      return fallback_that_can_fail(args, op, op.copyto ? "writes a view (MXNet's copy fails into a view of a oneDNN-layout array)"
                                                        : "writes a view (MXNet's op may fail into a view of a oneDNN-layout array)");

  // MXNet's _copyto (astype, copy, copyto, as_in_context) has _copyto as its backward, whose
  // kernel (CopyFromToSimple) ignores the request: eager's backward overwrites the gradient of a
  // grad_req='add' variable it reads instead of adding into it (unless MXNet sums several
  // contributions first). The _copy and Cast we record add: run it eagerly, so that MXNet's own
  // backward sees the same node as eager's.
  if (op.copyto && nin == 1 && t.runs_recorded() && autograd_peek_works()) {
    int req = 0;
    if (autograd_role(handle_of(in_objs[0]), &req) == AutogradRole::kVariable && req == 3 /* kAddTo */)
      return fallback(args, op, "its eager backward overwrites a grad_req='add' gradient");
  }

  // MXNet writes a one per channel: a gamma with more elements than channels keeps the rest.
  if (writes_ones_into_gamma && !gamma_matches_channels(*in_avals[0], *in_avals[1], attrs))
    return fallback(args, op, "fix_gamma writes ones into part of gamma (more elements than channels)");
  // A gamma of more than one axis may be an array oneDNN left in its blocked layout (a concat of
  // (2, 1) + (2, 3)): eagerly the BatchNorm then fails while it runs ("We can't generate TBlob
  // for MKLDNN data") and gamma keeps its values; recorded, the write of ones made it the
  // default layout first and the op ran. MXNet's op runs it, as eagerly (bad_input_sweep.py).
  if (writes_ones_into_gamma && in_avals[1]->ndim != 1)
    return fallback_that_can_fail(args, op, "fix_gamma writes ones into a gamma of more than one axis");

  // CopyFromTo (`copyto`, `x[:] = y`) has no graph form; within one context it is _copy or Cast.
  if (op.copyto && nin == 1 && out != Py_None && PyObject_HasAttrString(out, "handle")) {
    NDArrayHandle h = t.canonical(handle_of(out));
    auto it = t.slots.find(h);
    AVal target = it != t.slots.end() ? t.values[it->second.value].aval : aval_of(h);
    const AVal& src = t.values[in[0]].aval;
    bool same_place = target.dev_type == src.dev_type && target.dev_id == src.dev_id &&
                      (it != t.slots.end() || stype_of(h) == 0);
    // Two views of one array (`x[2][:] = x[1]`): MXNet's _copy run with its output sharing the
    // input's storage wrote nothing, where eager's CopyFromTo copies (fuzz seed 1119362).
    const NDArrayHandle src_ext = t.values[in[0]].ext;
    if (same_place && src_ext && chunk_of(src_ext) && chunk_of(src_ext) == chunk_of(h))
      return fallback(args, op, "copies between two views of one array");
    if (same_place && target.ndim == src.ndim && std::equal(src.dims, src.dims + src.ndim, target.dims)) {
      TraceEmitter em(ts);
      // Named attribute lists, not temporaries in a conditional: GCC 12 then warned that one
      // of them might be destroyed uninitialised (-Wmaybe-uninitialized, a false positive).
      std::vector<Attr> attrs_of_copy;
      if (target.dtype != src.dtype) attrs_of_copy.push_back({"dtype", dtype_name(target.dtype)});
      const std::vector<int> source{in[0]};
      int v = em.node(target.dtype == src.dtype ? "_copy" : "Cast", std::move(attrs_of_copy), source);
      t.note_user_op(op.hash);
      mark.done = true;
      return bind_results(ts, {v}, {out}, out, is_np, as_list);
    }
  }

  // A scalar op recorded under autograd keeps its scalar as an attribute: lifted into an array
  // it would run as the broadcast op, whose gradient MXNet computes otherwise (x / s: the
  // gradient is g * (1 / s) instead of g / s, another value for a third of the inputs at
  // s = 1.5; the others turn eager's -0 into +0). A scalar that keeps changing there compiles
  // a graph per value until the recompile limit, then runs eagerly.
  const char* lift = ts.trace.recording && !op.update ? "" : op.lift;
  bool hot = *lift && is_hot(ts, op, lift, attrs);
  OpInfo* ours = nullptr;  // our multi-tensor kernel recorded in the op's place
  // A run-time error on an input (a failed tile before it) skips MXNet's update as a whole and
  // stays on its outputs. Our kernel, a library op, is skipped alike but also holds a temp-space
  // resource, which inherits the error and passes it to the next op given that resource (a random
  // draw after it raised the tile's error, and a product of the updated weight read garbage: fuzz
  // seed 9032816); a multi-weight update expanded into per-weight computations would update the
  // other weights (fuzz seed 304042). In a trace that can fail, or reading an array a run may
  // have left an error on, MXNet's op runs, where it is called, and every array it reads or
  // updates in place is probed: a later trace reading one runs op by op until it is seen clean.
  auto reads_a_suspect = [&] {
    std::vector<NDArrayHandle> handles;
    for (PyObject* a : in_objs) handles.push_back(handle_of(a));
    return any_suspect(handles);
  };
  if (op.update && (hot || op.expands || op.no_symbolic_form) && (t.can_fail || reads_a_suspect())) {
    std::vector<int> every_input(in_objs.size());
    for (size_t i = 0; i < every_input.size(); ++i) every_input[i] = static_cast<int>(i);
    return fallback_that_can_fail(
        args, op, "an update after an op that can fail (MXNet's op, which holds no temp space)", every_input);
  }
  if (op.update && (hot || op.expands || op.no_symbolic_form)) {
    ours = as_update_kernel(ts, op, hot, attr_hash, &attrs, &in);
    if (ours) {
      attr_hash = hash_attrs(attrs);
      in_avals.resize(in.size());
      for (size_t i = 0; i < in.size(); ++i) in_avals[i] = &t.values[in[i]].aval;
    }
  }
  if (op.no_symbolic_form && !ours) return fallback(args, op, "no symbolic form in MXNet 1.9.1");
  if (!ours && ((op.fail_rule != FailRule::kNever && call_can_fail(op.fail_rule, in_avals, attrs)) ||
                (op.batch_norm_data && !in.empty() && batch_norm_backward_can_fail(t, op.name, in[0])))) {
    if (errors_are_synchronous()) return fallback(args, op, "fails where it is called (NaiveEngine)");
    ours = &failing_twin(op);  // recorded as an op that can fail: its trace runs op by op
  }
  OpInfo& rec_op = ours ? *ours : op;  // what goes into the trace
  // An expansion's first results are on cpu (pinned and shared memory do not propagate), and
  // its next nodes would mix them with the pinned inputs, which a graph cannot take (a kvstore's
  // stored weights are on cpu_pinned(0)): MXNet's op runs, as eagerly.
  if (!ours && (hot || op.expands) &&
      std::any_of(in_avals.begin(), in_avals.end(),
                  [](const AVal* a) { return a->dev_type == kCPUPinned || a->dev_type == kCPUShared; })) {
    if (op.update && launch_cpu_memory_update(ts, op, attrs, in_objs, in_avals, out)) return out_result(args);
    return fallback(args, op, "an update of arrays in pinned or shared memory");
  }
  // A multi-weight update given one array twice (weight 0 also the gradient of weight 1) reads,
  // element by element, what its earlier weights wrote there (MultiSGDKernel loops over the
  // weights inside each element); an expansion per weight would read the call's inputs as they
  // were (fuzz seed 9835811, lifted lrs), and MXNet's multi_sgd_mom_update has no working shape
  // inference to record it as one op. Such a call runs as MXNet's op where it is called (counted).
  if (!ours && op.multi_weight_update && std::set<int>(in.begin(), in.end()).size() != in.size())
    return fallback(args, op, "one array as two inputs of a multi-weight update");
  if (!ours && (hot || op.expands)) {
    if (!hot && op.name == "multi_sgd_mom_update")  // its momenta are updated in place: materialise them
      for (size_t k = 2; k < in.size(); k += 3)      // (w, g, mom) per weight
        if (t.values[in[k]].node >= 0) return flush_and_retry(ts, op, args);
    TraceEmitter em(ts);
    std::vector<int> outs;
    std::vector<std::pair<int, int>> updates;
    bool done = hot ? expand_lifted(op.name, attrs, in, em, &outs, &updates)
                    : expand_native(op.name, attrs, in, em, &outs, &updates);
    if (done) {
      for (const auto& u : updates) t.slots[t.canonical(handle_of(in_objs[u.first]))].value = u.second;
      t.note_user_op(op.hash);
      mark.done = true;
      return bind_results(ts, outs, out_arrays(out), out, is_np, as_list);
    }
  }

  const OpSignature* sig = &R->sigs.lookup(rec_op, attrs, attr_hash, in_avals, np_shape);  // may throw OpInputError
  if (!sig->recordable) return fallback(args, op, sig->why_not);
  // MXNet's arrays hold fewer than 2^31 elements (built without USE_INT64_TENSOR_SIZE): eagerly
  // such a result is made, and reading anything of it, its shape too, raises (RNN given
  // state_size=-1: inference gives an axis of -1, 2^32 - 1 as MXNet's unsigned dimension); a
  // lazy array of that shape cannot even be made. MXNet's op runs it.
  for (const AVal& o : sig->outs)
    if (std::any_of(o.dims, o.dims + o.ndim, [](int64_t d) { return d < 0; }) || o.size() >= (int64_t{1} << 31) - 1)
      return fallback_that_can_fail(args, op, "a result of 2^31 elements or more (MXNet's arrays hold fewer)");
  // Its trial run on these inputs' shapes and dtypes failed while it ran (infer.cc): recorded as
  // an op that can fail, so its trace runs op by op.
  OpInfo& node_op = sig->fails_while_running && !rec_op.can_fail ? failing_twin(rec_op) : rec_op;
  // fix_gamma's ones are recorded as a write of their own (below), which would run where the
  // op failed: eagerly a failed BatchNorm leaves gamma as it was (BatchNorm_v1 of 3-d or float16
  // data; bad_input_sweep.py). MXNet's op runs it, as eagerly; what it wrote is probed.
  if (writes_ones_into_gamma && node_op.can_fail)
    return fallback_that_can_fail(args, op, "fix_gamma writes ones into gamma, and it may fail while it runs",
                                  sig->mutable_inputs);

  // out=: the written arrays must match what the op produces.
  std::vector<PyObject*> out_objs = out_arrays(out);
  if (!out_objs.empty()) {
    if (out_objs.size() != sig->outs.size())
      throw OpInputError("operator '" + op.name + "' produces " + std::to_string(sig->outs.size()) +
                         " outputs but out= gave " + std::to_string(out_objs.size()));
    for (size_t i = 0; i < out_objs.size(); ++i) {
      NDArrayHandle h = t.canonical(handle_of(out_objs[i]));
      auto it = t.slots.find(h);
      AVal have = it != t.slots.end() ? t.values[it->second.value].aval : aval_of(h);
      const AVal& want = sig->outs[i];
      if (have.dev_type != want.dev_type || have.dev_id != want.dev_id || (it == t.slots.end() && stype_of(h) != 0)) {
        return fallback(args, op, "out= on another context or storage");
      }
      if (have.ndim != want.ndim || have.size() != want.size() || have.dtype != want.dtype ||
          !std::equal(have.dims, have.dims + have.ndim, want.dims)) {
        throw OpInputError("operator '" + op.name + "': out= array " + std::to_string(i) + " has shape " +
                           have.shape_str() + " " + dtype_name(have.dtype) + " but the result is " +
                           want.shape_str() + " " + dtype_name(want.dtype));
      }
    }
  }

  // An op that updates an input in place needs that input materialised first.
  for (int mi : sig->mutable_inputs)
    if (mi < nin && t.values[in[mi]].node >= 0) return flush_and_retry(ts, op, args);

  const bool onednn_concat = (op.fail_rule == FailRule::kAnyInputOver6AxesOnCpu || op.activation) &&
                             makes_onednn_concat_result(t, op.name, attrs, in);
  int first = append_node(ts, node_op, std::move(attrs), attr_hash, in, *sig);
  t.note_user_op(op.hash);
  ScratchVector<int> outs_scratch(0);
  std::vector<int>& outs = outs_scratch.get();
  for (size_t i = 0; i < sig->outs.size(); ++i) outs.push_back(first + static_cast<int>(i));
  if (writes_ones_into_gamma) {
    TraceEmitter em(ts);
    write_into(t, in_objs[1], em.node("ones_like", {}, {in[1]}));
  }
  mark.done = true;
  py::object result = bind_results(ts, outs, out_objs, out, is_np, as_list);
  PyObject* arr = out_objs.empty() ? result.ptr() : out_objs[0];
  if (onednn_concat && is_ndarray(arr)) note_onednn_concat_result(handle_of(arr));  // failures.h: BatchNorm's backward
  return result;
}


// The interceptor as a METH_FASTCALL builtin: MXNet calls it once per op, so it skips
// pybind11's overload dispatch.
PyObject* invoke_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs) {
  if (!hooks_active() || nargs != static_cast<Py_ssize_t>(CallArgs::kCount))
    return PyObject_Vectorcall(R->orig_invoke.ptr(), argv, static_cast<size_t>(nargs), nullptr);
  try {
    return invoke_call(CallArgs{argv}).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    set_python_error(e);
  }
  return nullptr;
}

}  // namespace minpy
