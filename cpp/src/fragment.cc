// Fragments of @minpy_jit.function: guard checks, replay, and turning a capture
// into a variant. See fragment.h for the design.
#include "fragment.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "explain.h"
#include "failures.h"
#include "launch.h"
#include "mxapi.h"
#include "nogil.h"
#include "runtime.h"

namespace minpy {

// Defined in record.cc / executor.cc.
bool segment_due(const ThreadState& ts);
NDArrayHandle dummy_input(int dev_type, int dev_id);

namespace {

struct FragmentCounters {
  uint64_t calls = 0, direct = 0, appended = 0, misses = 0, captures = 0, refused = 0;
} counters;

// ------------------------------------------------------------------ capture bookkeeping

// A capture under way on this thread (they do not nest: an inner fragment called
// while one is captured runs its statements without capturing).
struct Capture {
  FragmentState* F = nullptr;
  size_t n0 = 0, v0 = 0;       // trace size at the start
  int ordinal = 0;             // the thread's flush count at the start
  bool rec = false, train = false, np = false;
  bool strict = false;         // ahead of time: a data access is an error, not a note
  bool grad_state_ok = false;  // inside a Trainer.step the capture models: its flag writes are effects
  std::string touched;         // the first data access seen, "" if none
  int touched_loc = -1;        // ... and the user's line that made it
  uint64_t fallbacks = 0;      // eager fallbacks counted at the start
  std::unordered_map<NDArrayHandle, int> start;  // every slot's value at the start
};
thread_local std::vector<Capture> captures;

uint64_t fallback_total() {
  uint64_t n = 0;
  for (const auto& kv : R->stats.fallbacks) n += kv.second;
  return n;
}

// ------------------------------------------------------------------ per-call scratch

// What one guard walk collects. Calls may nest (a getattr can run Python that calls
// another fragment), so each nesting level has its own.
struct Walk {
  std::vector<PyObject*> objs;          // per leaf: the array object (borrowed, kept alive by refs/args)
  std::vector<NDArrayHandle> handles;   // per leaf
  std::vector<PyObject*> kept;          // per kept slot (borrowed)
  std::vector<PyObject*> refs;          // new references taken during the walk
  int fail_node = -1;                   // first failing guard node
  PyObject* fail_value = nullptr;       // its value (borrowed; valid until release)
  bool fail_alias = false;
  int fail_grad_req = -1;               // a leaf whose grad_req changed ('add' or not)
  int fail_autograd = -1;               // a leaf autograd knows otherwise than at capture
  int fail_grad_buffer = -1;            // a gradient target whose buffer changed
  std::vector<NDArrayHandle> grads;     // per gradient target (Variant::grads): its buffer now
  void reset(const Variant& v) {
    objs.assign(v.num_leaves, nullptr);
    handles.assign(v.num_leaves, nullptr);
    kept.assign(v.num_kept, nullptr);
    grads.assign(v.grads.size(), nullptr);
    fail_node = -1;
    fail_value = nullptr;
    fail_alias = false;
    fail_grad_req = -1;
    fail_autograd = -1;
    fail_grad_buffer = -1;
  }
  void release() {
    for (PyObject* o : refs) Py_DECREF(o);
    refs.clear();
  }
};

thread_local std::vector<std::unique_ptr<Walk>> walk_pool;
thread_local size_t walk_depth = 0;

struct WalkLease {
  Walk* w;
  WalkLease() {
    if (walk_pool.size() <= walk_depth) walk_pool.emplace_back(new Walk());
    w = walk_pool[walk_depth++].get();
  }
  ~WalkLease() {
    w->release();
    --walk_depth;
  }
};

// ------------------------------------------------------------------ guard checks

bool same_value(PyObject* a, PyObject* b) {
  if (a == b) return true;
  if (PyFloat_CheckExact(a)) {
    double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
    return std::memcmp(&x, &y, sizeof x) == 0;  // -0.0 and 0.0 print differently: different attributes
  }
  int eq = PyObject_RichCompareBool(a, b, Py_EQ);
  if (eq < 0) {
    PyErr_Clear();
    return false;
  }
  return eq == 1;
}

bool array_aval(NDArrayHandle h, AVal* a) {
  if (peek_works() && peek_aval(h, a)) return true;
  try {
    if (stype_of(h) != 0) return false;
    *a = aval_of_c_api(h);
    return true;
  } catch (const MXError&) {
    return false;
  }
}

// Checks node `i` (advancing i past its subtree) against `val`; collects leaves. With
// `record` (the capture's own inputs), arrays and lengths are taken as they are instead.
bool walk_node(const Variant& v, size_t& i, PyObject* val, Walk& w, bool record = false) {
  const size_t me = i++;
  if (record) {
    GuardNode& m = const_cast<GuardNode&>(v.guards[me]);
    if (m.kind == GuardNode::kArray) {
      NDArrayHandle h = is_ndarray(val) ? handle_of(val) : nullptr;
      if (!h || !array_aval(h, &m.aval)) {
        w.fail_node = static_cast<int>(me);
        w.fail_value = val;
        return false;
      }
      m.type = Py_TYPE(val);
    } else if (m.kind == GuardNode::kLen) {
      m.len = PyObject_Length(val);
      if (m.len < 0) PyErr_Clear();
    }
  }
  const GuardNode& n = v.guards[me];
  bool ok = true;
  switch (n.kind) {
    case GuardNode::kArray: {
      ok = Py_TYPE(val) == n.type;
      if (ok) {
        NDArrayHandle h = handle_of(val);
        AVal a;
        ok = h && array_aval(h, &a) && a == n.aval;
        if (ok) {
          w.handles[n.leaf] = h;
          w.objs[n.leaf] = val;
        }
      }
      break;
    }
    case GuardNode::kValue:
      ok = Py_TYPE(val) == n.type && same_value(val, n.expected.ptr());
      break;
    case GuardNode::kIdentity:
      ok = val == n.expected.ptr();
      break;
    case GuardNode::kType:
      ok = Py_TYPE(val) == n.type;
      break;
    case GuardNode::kSeq:
      ok = Py_TYPE(val) == n.type && Py_SIZE(val) == n.len;
      break;
    case GuardNode::kDict:
      ok = Py_TYPE(val) == n.type && PyDict_Size(val) == n.len;
      break;
    case GuardNode::kLen: {
      Py_ssize_t len = PyObject_Length(val);
      if (len < 0) PyErr_Clear();
      ok = len == n.len;
      break;
    }
    case GuardNode::kFreshGrad: {  // a precondition of the call: at the end of a capture it is cleared
      int fresh = 0;
      NDArrayHandle h = is_ndarray(val) ? handle_of(val) : nullptr;
      ok = record || n.set_inside || (h && MXNDArrayGetGradState(h, &fresh) == 0 && fresh == 1);
      break;
    }
  }
  if (!ok) {
    w.fail_node = static_cast<int>(me);
    w.fail_value = val;
    return false;
  }
  if (n.keep >= 0) w.kept[n.keep] = val;
  Py_ssize_t dict_pos = 0;
  PyObject* instance_dict = nullptr;
  for (int c = 0; c < n.children; ++c) {
    const GuardNode& child = v.guards[i];
    PyObject* cv = nullptr;
    switch (child.access) {
      case GuardNode::kAttr:
        cv = PyObject_GetAttr(val, child.key.ptr());
        if (!cv) PyErr_Clear();
        break;
      case GuardNode::kItem:
        if (!instance_dict) {
          PyObject** dp = _PyObject_GetDictPtr(val);
          instance_dict = dp ? *dp : nullptr;
        }
        cv = instance_dict ? PyDict_GetItemWithError(instance_dict, child.key.ptr()) : nullptr;
        if (cv) Py_INCREF(cv);
        else PyErr_Clear();
        break;
      case GuardNode::kIndex:
        cv = PyList_Check(val) ? PyList_GET_ITEM(val, child.index) : PyTuple_GET_ITEM(val, child.index);
        Py_XINCREF(cv);
        break;
      case GuardNode::kSelf:
        cv = val;
        Py_INCREF(cv);
        break;
      case GuardNode::kDictEntry: {  // entries in insertion order: same keys, same order
        PyObject *k = nullptr, *item = nullptr;
        if (PyDict_Next(val, &dict_pos, &k, &item) && same_value(k, child.key.ptr())) {
          cv = item;
          Py_INCREF(cv);
        }
        break;
      }
      default:
        break;
    }
    if (!cv) {
      w.fail_node = static_cast<int>(i);
      w.fail_value = nullptr;
      return false;
    }
    w.refs.push_back(cv);
    if (!walk_node(v, i, cv, w, record)) return false;
  }
  return true;
}

// Leaves that shared an array at capture share one now, and no others do; an array the
// variant writes in place shares no storage with another leaf (a view), which one graph
// could not order against.
bool aliasing_holds(const Variant& v, Walk& w) {
  const int n = v.num_leaves;
  if (n <= 1) return true;
  if (n <= 12) {
    for (int i = 1; i < n; ++i) {
      int first = i;
      for (int j = 0; j < i; ++j)
        if (w.handles[j] == w.handles[i]) {
          first = j;
          break;
        }
      if (first != v.same_as[i]) return false;
    }
  } else {
    size_t cap = 32;
    while (cap < 2 * static_cast<size_t>(n)) cap <<= 1;
    static thread_local std::vector<std::pair<NDArrayHandle, int>> table;
    table.assign(cap, {nullptr, -1});
    for (int i = 0; i < n; ++i) {
      NDArrayHandle h = w.handles[i];
      size_t k = static_cast<size_t>(mix64(reinterpret_cast<uintptr_t>(h))) & (cap - 1);
      while (table[k].first && table[k].first != h) k = (k + 1) & (cap - 1);
      if (!table[k].first) table[k] = {h, i};
      if (table[k].second != v.same_as[i]) return false;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!v.written[i] || v.same_as[i] != i) continue;
    const void* c = chunk_of(w.handles[i]);
    for (int j = 0; j < n; ++j)
      if (w.handles[j] != w.handles[i] && chunk_of(w.handles[j]) == c) return false;
  }
  return true;
}

// What autograd knows of an array, as backward_in_graph decides by it: 0 nothing; 1-3 a
// variable with that grad_req (write, inplace, add); 4 in MXNet's graph without being a
// variable; 5 recorded history.
signed char autograd_code(NDArrayHandle h) {
  int req = 0;
  switch (autograd_role(h, &req)) {
    case AutogradRole::kVariable:
      return static_cast<signed char>(req);
    case AutogradRole::kNone:
      return in_autograd_graph(h) ? 4 : 0;
    default:
      return 5;
  }
}

// A variant holding backward(): what it computes, and where the gradients go, depend on what
// autograd knows of the arrays its recorded ops read (which are variables, which constants)
// and on each variable's gradient buffer -- the same as at capture, found again here
// (Walk::grads) without a C API call.
bool backward_holds(const Variant& v, Walk& w) {
  for (size_t i = 0; i < v.leaf_role.size(); ++i)
    if (v.leaf_role[i] >= 0 && autograd_code(w.handles[i]) != v.leaf_role[i]) {
      w.fail_autograd = static_cast<int>(i);
      return false;
    }
  for (size_t k = 0; k < v.grads.size(); ++k) {
    const GradTarget& g = v.grads[k];
    NDArrayHandle b = grad_buffer_of(w.handles[g.variable]);
    AVal a;
    bool ok = b && peek_aval(b, &a) && a == g.aval;
    for (int leaf : g.aliases) ok = ok && chunk_of(w.handles[leaf]) == chunk_of(b);
    if (!ok) {
      w.fail_grad_buffer = static_cast<int>(k);
      return false;
    }
    w.grads[k] = b;
  }
  return true;
}

bool check_variant(const Variant& v, PyObject* const* args, Py_ssize_t nargs, Walk& w) {
  w.reset(v);
  size_t i = 0;
  while (i < v.guards.size()) {
    const GuardNode& root = v.guards[i];
    if (root.index >= nargs) return false;
    if (!walk_node(v, i, args[root.index], w)) return false;
  }
  if (!aliasing_holds(v, w)) {
    w.fail_alias = true;
    return false;
  }
  for (size_t leaf = 0; leaf < v.adds_gradient.size(); ++leaf)
    if (v.adds_gradient[leaf] >= 0 && v.adds_gradient[leaf] != (adds_to_gradient(w.handles[leaf]) ? 1 : 0)) {
      w.fail_grad_req = static_cast<int>(leaf);
      return false;
    }
  return v.grads.empty() || backward_holds(v, w);
}

std::string repr_of(PyObject* o) {
  if (!o) return "(missing)";
  PyObject* r = PyObject_Repr(o);
  if (!r) {
    PyErr_Clear();
    return "?";
  }
  const char* s = PyUnicode_AsUTF8(r);
  std::string out = s ? s : "?";
  Py_DECREF(r);
  if (out.size() > 60) out = out.substr(0, 57) + "...";
  return out;
}

std::string type_name(PyTypeObject* t) { return t ? t->tp_name : "?"; }

// "argument `x` shape (64, 784) -> (32, 784)"
std::string describe_failure(const Variant& v, const Walk& w) {
  if (w.fail_alias) return "the arrays passed share memory differently than when compiled (same array twice, or a view of an array the fragment writes)";
  if (w.fail_grad_req >= 0) {
    for (const GuardNode& n : v.guards)
      if (n.kind == GuardNode::kArray && n.leaf == w.fail_grad_req)
        return n.what + (v.adds_gradient[w.fail_grad_req] ? " grad_req 'add' -> another" : " grad_req -> 'add'") +
               (n.where.empty() ? "" : ", " + n.where);
    return "an array's grad_req changed ('add' or not)";
  }
  if (w.fail_autograd >= 0 || w.fail_grad_buffer >= 0) {
    const int leaf = w.fail_autograd >= 0 ? w.fail_autograd : v.grads[w.fail_grad_buffer].variable;
    for (const GuardNode& n : v.guards)
      if (n.kind == GuardNode::kArray && n.leaf == leaf)
        return n.what + (w.fail_autograd >= 0 ? " is known to autograd otherwise than when compiled (attach_grad, "
                                                "grad_req, or recorded history)"
                                              : " has another gradient buffer than when compiled") +
               (n.where.empty() ? "" : ", " + n.where);
    return "an array read by backward() changed its autograd role";
  }
  if (w.fail_node < 0) return "guards failed";
  const GuardNode& n = v.guards[w.fail_node];
  std::string what = n.what.empty() ? "a value" : n.what;
  const std::string at = n.where.empty() ? "" : ", " + n.where;
  PyObject* val = w.fail_value;
  if (!val) return what + " is no longer there" + at;
  std::string got;
  switch (n.kind) {
    case GuardNode::kArray: {
      if (Py_TYPE(val) != n.type) {
        got = "type " + type_name(n.type) + " -> " + type_name(Py_TYPE(val));
        break;
      }
      AVal a;
      NDArrayHandle h = handle_of(val);
      if (!h || !array_aval(h, &a)) {
        got = "is no longer a dense array";
      } else if (a.ndim != n.aval.ndim || !std::equal(a.dims, a.dims + a.ndim, n.aval.dims)) {
        got = "shape " + n.aval.shape_str() + " -> " + a.shape_str();
      } else if (a.dtype != n.aval.dtype) {
        got = std::string("dtype ") + dtype_name(n.aval.dtype) + " -> " + dtype_name(a.dtype);
      } else {
        got = "context " + ctx_str(n.aval.dev_type, n.aval.dev_id) + " -> " + ctx_str(a.dev_type, a.dev_id);
      }
      break;
    }
    case GuardNode::kValue:
      if (Py_TYPE(val) != n.type) got = "type " + type_name(n.type) + " -> " + type_name(Py_TYPE(val));
      else got = repr_of(n.expected.ptr()) + " -> " + repr_of(val);
      break;
    case GuardNode::kIdentity:
      got = repr_of(n.expected.ptr()) + " -> " + repr_of(val);
      break;
    case GuardNode::kType:
      got = "type " + type_name(n.type) + " -> " + type_name(Py_TYPE(val));
      break;
    case GuardNode::kSeq:
    case GuardNode::kDict:
      if (Py_TYPE(val) != n.type) got = "type " + type_name(n.type) + " -> " + type_name(Py_TYPE(val));
      else got = "length " + std::to_string(n.len) + " -> " + std::to_string(Py_SIZE(val) >= 0 && n.kind == GuardNode::kSeq ? Py_SIZE(val) : PyDict_Size(val));
      break;
    case GuardNode::kLen: {
      Py_ssize_t len = PyObject_Length(val);
      if (len < 0) PyErr_Clear();
      got = "length " + std::to_string(n.len) + " -> " + std::to_string(len);
      break;
    }
    case GuardNode::kFreshGrad:
      got = "has no new gradient since the last step (Trainer.step would raise)";
      break;
  }
  return what + " " + got + at;
}

// ------------------------------------------------------------------ replay

// The result object of one replay, from the variant's recipe.
PyObject* build_result(const Variant& v, size_t& i, const std::vector<PyObject*>& fresh, const Walk& w) {
  const ResultNode& r = v.result[i++];
  switch (r.kind) {
    case ResultNode::kNewArray:
      Py_INCREF(fresh[r.index]);
      return fresh[r.index];
    case ResultNode::kLeafArray:
      Py_INCREF(w.objs[r.index]);
      return w.objs[r.index];
    case ResultNode::kKept:
      Py_INCREF(w.kept[r.index]);
      return w.kept[r.index];
    case ResultNode::kConst:
      Py_INCREF(r.value.ptr());
      return r.value.ptr();
    case ResultNode::kTuple:
    case ResultNode::kList: {
      PyObject* out = r.kind == ResultNode::kTuple ? PyTuple_New(r.children) : PyList_New(r.children);
      if (!out) return nullptr;
      for (int c = 0; c < r.children; ++c) {
        PyObject* item = build_result(v, i, fresh, w);
        if (!item) {
          Py_DECREF(out);
          return nullptr;
        }
        if (r.kind == ResultNode::kTuple) PyTuple_SET_ITEM(out, c, item);
        else PyList_SET_ITEM(out, c, item);
      }
      return out;
    }
    case ResultNode::kDict: {
      PyObject* out = PyDict_New();
      for (int c = 0; c < r.children; c += 2) {
        PyObject* k = build_result(v, i, fresh, w);
        PyObject* val = build_result(v, i, fresh, w);
        if (!k || !val || PyDict_SetItem(out, k, val) < 0) {
          Py_XDECREF(k);
          Py_XDECREF(val);
          Py_DECREF(out);
          return nullptr;
        }
        Py_DECREF(k);
        Py_DECREF(val);
      }
      return out;
    }
  }
  return nullptr;
}

// What the statements change besides arrays (see Effect).
bool apply_effects(const Variant& v, const Walk& w) {
  for (const Effect& e : v.effects) {
    PyObject* obj = w.kept[e.kept];
    if (e.kind == Effect::kAttrSet) {
      if (PyObject_SetAttr(obj, e.key.ptr(), e.value.ptr()) < 0) return false;
      continue;
    }
    if (e.kind == Effect::kClearGrad) {
      NDArrayHandle h = handle_of(obj);
      if (MXNDArraySetGradState(h, 0) != 0) {
        set_python_error(mxnet_failure());
        return false;
      }
      continue;
    }
    const bool attr = e.kind == Effect::kAttrDelta;
    PyObject* cur = attr ? PyObject_GetAttr(obj, e.key.ptr()) : PyObject_GetItem(obj, e.key.ptr());
    if (!cur) return false;
    PyObject* d = PyLong_FromLongLong(e.delta);
    PyObject* next = PyNumber_Add(cur, d);
    Py_DECREF(cur);
    Py_DECREF(d);
    if (!next) return false;
    int rc = attr ? PyObject_SetAttr(obj, e.key.ptr(), next) : PyObject_SetItem(obj, e.key.ptr(), next);
    Py_DECREF(next);
    if (rc < 0) return false;
  }
  return true;
}

PyObject* finish_result(const Variant& v, const std::vector<PyObject*>& fresh, const Walk& w) {
  size_t i = 0;
  PyObject* out = build_result(v, i, fresh, w);
  if (!out) return nullptr;
  if (!apply_effects(v, w)) {
    Py_DECREF(out);
    return nullptr;
  }
  if (v.bare_result && PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1) {
    PyObject* item = PyTuple_GET_ITEM(out, 0);
    Py_INCREF(item);
    Py_DECREF(out);
    return item;
  }
  return out;
}

std::vector<OutputSpec> output_specs(const Variant& v) {
  std::vector<OutputSpec> specs;
  for (const auto& o : v.outputs) specs.push_back({o.value, o.target_ext, nullptr});
  return specs;
}

std::string key_str(const Key128& k) {
  char buf[20];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(k.a));
  return buf;
}

// The variant's executor: shared with the jit() cache when the same graph is there.
// A recorded variant launched directly is a node of MXNet's autograd graph whose backward is not
// known at the launch: its ops are recorded one by one, unfused, as a recorded jit() segment
// flushed before its backward (flush.cc, parts_recorded_per_op), so that a zero-gradient op
// recorded later makes MXNet's pass skip them as eagerly (a static CachedOp node runs its whole
// backward with zero arrays: NaN where eager's gradient is 0).
void ensure_executor(FragmentState& F, Variant& v) {
  if (v.exe || v.eager_only || v.outputs.empty()) return;
  const bool per_op = v.trace.runs_recorded();
  Key128 key = v.key;
  if (per_op) key.add(0x1D11AEDULL);  // as flush.cc keys such a graph
  key.add(0xA10EULL);  // lowered for a replay (Trace::launched_alone), not as jit()'s graph of it
  auto cached = R->cache.find(key);
  if (cached && cached->op) {
    v.exe = cached;
    return;
  }
  std::vector<OutputSpec> specs = output_specs(v);
  LoweredGraph g;
  try {
    auto exe = compile(v.trace, specs, &R->nondiff, R->cfg.fuse && !R->kernels.empty() && !per_op, &g, per_op);
    exe->fused_kernels = g.kernel_calls;
    exe->fused_ops = g.kernel_ops;
    exe->key = key;
    exe->site = F.name;
    exe->steps = steps_of(v.trace);
    for (const auto& o : v.outputs) exe->outputs.emplace_back(o.value, o.target_ext);
    exe->recording = v.trace.recording;
    exe->training = v.trace.training;
    std::string title = "graph " + key_str(v.key) + "  (" + std::to_string(exe->num_nodes) + " nodes, " +
                        std::to_string(g.input_values.size()) + " inputs, " + std::to_string(specs.size()) +
                        " outputs)  fragment " + F.name;
    exe->ir = print_graph(v.trace, g, specs, [](int loc) { return R->sources.str(loc); }, title);
    ++R->stats.cache_misses;
    R->stats.compile_ms += exe->compile_ms;
    R->stats.cache_evictions += R->cache.insert(key, exe);
    // Another thread may have compiled the variant while this one compiled without the GIL (an
    // FC check waits for MXNet): the first executor stays, a replay may be running it.
    if (!v.exe) v.exe = exe;
  } catch (const MXError& e) {
    v.eager_only = true;
    v.compile_error = first_line(e.what());
  }
}

// The CachedOp a direct launch runs: the executor's own (null), or the variant's with its stable
// inputs declared as parameters (see Variant::StableInputs). Only for graphs that are not
// recorded (the gradient path stays the executor's), write no input in place, and do not run
// as a direct kernel launch (kernel_launch.h: no CachedOp at all).
std::shared_ptr<void> stable_inputs_op(Variant& v, const Executor& exe, const Walk& w,
                                       const std::vector<NDArrayHandle>& ins, const std::vector<NDArrayHandle>& outs) {
  Variant::StableInputs& s = v.stable_inputs;
  if (v.trace.recording || !exe.placeholders.empty() || !exe.layout_inputs.empty() || (s.decided && !s.op) ||
      (exe.kernel_launch && R->cfg.direct_kernels))
    return nullptr;
  auto hold = [&](size_t i) {  // the Python array behind input i (constants and the stand-in: none)
    const int val = exe.input_values[i];
    PyObject* o = val >= 0 && v.ext_leaf[val] >= 0 ? w.objs[v.ext_leaf[val]] : nullptr;
    return o ? py::reinterpret_borrow<py::object>(o) : py::object();
  };
  ++s.launches;
  if (!s.decided && s.launches >= 2 && s.last.size() == ins.size()) {
    s.decided = true;
    bool writes_input = false;
    for (const Node& n : v.trace.nodes) writes_input |= !n.mutated.empty();
    s.stable.assign(ins.size(), 0);
    for (size_t i = 0; i < ins.size(); ++i) {
      const bool written = std::find(outs.begin(), outs.end(), ins[i]) != outs.end();
      s.stable[i] = ins[i] == s.last[i] && !written;
      if (!s.stable[i]) s.held[i] = py::object();
    }
    if (!writes_input)  // else the executor's
      without_gil([&] {
        s.op = param_cached_op(exe.json, s.stable);
        return 0;
      });
    if (!s.op) s.held.clear();
  } else if (!s.decided) {  // the first launch: remember (and hold) every input
    s.held.clear();
    for (size_t i = 0; i < ins.size(); ++i) s.held.push_back(hold(i));
  } else if (s.op) {
    bool changed = false;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!s.stable[i] || ins[i] == s.last[i]) continue;
      s.held[i] = hold(i);
      changed = true;
    }
    if (changed && ++s.misses >= kParamMisses) {
      s.op.reset();  // freed once no launch holds it
      s.held.clear();
    }
  }
  s.last = ins;
  return s.op;
}

// One CachedOp launch for the whole fragment (no trace involved). Returns null with no
// Python error when the statements must run in Python instead.
PyObject* replay_direct(FragmentState& F, Variant& v, Walk& w) {
  if (v.outputs.empty()) return finish_result(v, {}, w);  // no array op: the result is inputs and constants
  ensure_executor(F, v);
  if (!v.exe) return nullptr;
  drain_launches();
  if (R->pending) flush_all("fragment call");
  const std::shared_ptr<Executor> held = v.exe;  // alive through the launch, whatever other threads do
  Executor& exe = *held;
  static thread_local LaunchArrays arrays;
  std::vector<NDArrayHandle>&ins = arrays.ins, &outs = arrays.outs;
  ins.clear();
  outs.clear();
  arrays.ours_write.clear();
  arrays.direct_kernel = R->cfg.direct_kernels;
  for (int val : exe.input_values) {
    if (val < 0) {
      const AVal& a = v.trace.values[v.outputs.at(0).value].aval;
      ins.push_back(dummy_input(a.dev_type, a.dev_id));
    } else if (v.ext_leaf[val] >= 0) {
      ins.push_back(w.handles[v.ext_leaf[val]]);
    } else {
      ins.push_back(v.constants[val]);
    }
  }
  // An input an earlier failure may have reached: the statements run in Python (failures.h).
  if (any_suspect(ins)) return nullptr;
  std::vector<PyObject*> fresh(v.num_new, nullptr);
  struct Drop {
    std::vector<PyObject*>& objs;
    bool keep = false;
    ~Drop() {
      if (!keep)
        for (PyObject* o : objs) Py_XDECREF(o);
    }
  } drop{fresh};
  size_t scratch = 0;
  for (size_t k = 0; k < v.outputs.size(); ++k) {
    const FragmentOutput& o = v.outputs[k];
    NDArrayHandle h = nullptr;
    if (o.leaf >= 0) {
      h = w.handles[o.leaf];
    } else if (o.grad >= 0) {
      h = w.grads[o.grad];
    } else if (o.leaf == -2) {
      h = v.scratch[scratch++];
    } else {
      int idx = v.new_output_of_value[o.value];
      fresh[idx] = make_lazy(v.trace.values[o.value].aval, o.np, &h);
    }
    if (!exe.output_in_place[k]) outs.push_back(h);
    for (int o : exe.layout_outputs)
      if (o == static_cast<int>(k)) arrays.ours_write.push_back(h);
  }
  for (int p : exe.layout_inputs) arrays.ours_write.push_back(ins[p]);
  outs.insert(outs.end(), exe.placeholders.begin(), exe.placeholders.end());
  {
    AutogradState state(v.trace.runs_recorded(), v.trace.training);
    const std::shared_ptr<void> op = stable_inputs_op(v, exe, w, ins, outs);  // null: the executor's
    if (invoke_cached_op(exe, arrays, op.get()) != 0) return nullptr;  // the statements run in Python and fail there
  }
  R->stats.kernels_launched_directly += arrays.kernel_launched;
  ++exe.runs;
  ++R->stats.executions;
  R->stats.per_op_autograd += exe.per_op_autograd;
  R->stats.fused_kernels += exe.fused_kernels;
  R->stats.fused_ops += exe.fused_ops;
  // As MXNet's backward does, the gradients it wrote are marked fresh (before the effects: a
  // Trainer.step after it in the statements clears them again).
  for (const GradTarget& g : v.grads)
    if (MXNDArraySetGradState(w.handles[g.variable], 1) != 0) {
      set_python_error(mxnet_failure());
      return nullptr;
    }
  PyObject* out = finish_result(v, fresh, w);
  return out;  // `fresh` references dropped: the result holds them
}

// A new owned array holding a constant of the variant (a lifted scalar).
NDArrayHandle copy_constant(NDArrayHandle src, const AVal& a) {
  NDArrayHandle h = new_lazy_array(a);
  std::vector<char> bytes(static_cast<size_t>(a.size()) * dtype_bytes(a.dtype));
  MX_CALL(MXNDArraySyncCopyToCPU(src, bytes.data(), static_cast<size_t>(a.size())));
  MX_CALL(MXNDArraySyncCopyFromCPU(h, bytes.data(), static_cast<size_t>(a.size())));
  return h;
}

// The stored nodes appended to the thread's open trace, as one unit.
// Whether the variant's nodes may join a trace left open by backward() (Config::whole_step), as
// record.cc lets an op recorded after it join: not recorded, same shape semantics, and each
// node's result independent of the training flag where the flags differ (the optimizer update
// after `with autograd.record():` of W3's step runs in predict mode, its forward in train mode).
bool follows_backward(const Trace& t, const Variant& v) {
  if (t.backward < 0 || v.trace.recording || t.np_shape != v.np_shape) return false;
  if (t.training == v.trace.training) return true;
  return std::all_of(v.trace.nodes.begin(), v.trace.nodes.end(),
                     [](const Node& n) { return n.op->mode_independent; });
}

PyObject* replay_append(ThreadState& ts, Variant& v, Walk& w) {
  Trace& t = ts.trace;
  if (!ts.batch.empty()) push_update_batch(ts, "fragment call");  // updates gathered before it, first
  // Other contexts' open traces (record.cc) run first: a fragment's arrays are looked up in
  // the current trace only.
  if (!ts.parked.empty()) flush_thread(ts, "context switch", user_site());
  const Trace& ft = v.trace;
  if (!t.empty() && ft.backward >= 0)  // its backward() differentiates its own ops only
    flush_thread(ts, "a fragment's backward()", user_site());
  if (!t.empty() && !follows_backward(t, v) &&
      (t.backward >= 0 || t.recording != ft.recording || t.training != ft.training || t.np_shape != v.np_shape))
    flush_thread(ts, "autograd state changed", user_site());
  if (t.empty()) t.start(ft.recording, ft.training, v.np_shape);
  std::vector<PyObject*> fresh(v.num_new, nullptr);
  {
    struct Busy {
      int& b;
      ~Busy() { --b; }
    } busy{++ts.busy};
    std::vector<int> map(ft.values.size(), -1);
    for (size_t i = 0; i < ft.values.size(); ++i) {
      const Value& val = ft.values[i];
      if (val.node >= 0) continue;
      if (v.ext_leaf[i] >= 0) {
        NDArrayHandle h = w.handles[v.ext_leaf[i]];
        auto it = t.slots.find(t.canonical(h));  // a gradient a pending backward node writes: its value
        if (it != t.slots.end()) {
          map[i] = it->second.value;
        } else {
          Slot* slot = nullptr;
          map[i] = t.value_of(h, &val.aval, &slot);
          PyObject* owner = w.objs[v.ext_leaf[i]];
          Py_INCREF(owner);
          slot->owner = owner;
        }
      } else {  // a constant: the trace gets its own copy, freed after its flush
        NDArrayHandle h = copy_constant(v.constants[i], val.aval);
        t.owned.push_back(h);
        map[i] = t.value_of(h, &val.aval, nullptr);
      }
    }
    std::vector<int> in;
    std::vector<AVal> outs;
    std::vector<int> mutated;
    for (size_t k = 0; k < ft.nodes.size(); ++k) {
      const Node& n = ft.nodes[k];
      in.clear();
      for (int x : n.in) in.push_back(map[x]);
      outs.clear();
      for (int o : n.out) outs.push_back(ft.values[o].aval);
      mutated.clear();
      for (int m : n.mutated)
        for (size_t p = 0; p < n.in.size(); ++p)
          if (n.in[p] == m) {
            mutated.push_back(static_cast<int>(p));
            break;
          }
      std::vector<Attr> attrs = n.attrs;
      int first = t.add_node(n.op, std::move(attrs), v.attr_hash[k], in, outs, mutated, n.loc);
      for (size_t j = 0; j < n.out.size(); ++j) map[n.out[j]] = first + static_cast<int>(j);
      if (static_cast<int>(k) == ft.backward) t.backward = static_cast<int>(t.nodes.size()) - 1;
      t.note_user_op(n.op->hash);
      ++R->pending;
    }
    for (const FragmentOutput& o : v.outputs) {
      if (o.leaf == -2) continue;  // effectful node: the flush keeps it
      const int value = map[o.value];
      if (o.grad >= 0) {  // as backward_in_graph leaves its trace open: the update may join it
        NDArrayHandle g = nullptr;
        MX_CALL(MXNDArrayGetGrad(w.handles[v.grads[o.grad].variable], &g));
        t.owned.push_back(g);
        t.bind(g, value, false, nullptr);
        t.grad_buffers[chunk_of(g)] = g;
      } else if (o.leaf >= 0) {
        NDArrayHandle h = t.canonical(w.handles[o.leaf]);  // as record.cc's write_into
        const Value& val = t.values[value];
        Node& producer = t.nodes[val.node];  // eager replay writes where eager MXNet writes
        producer.targets.resize(producer.out.size(), nullptr);
        producer.targets[val.index] = h;
        auto it = t.slots.find(h);
        if (it != t.slots.end()) {
          t.rebind(it->second, h, value);
        } else {
          PyObject* owner = w.objs[o.leaf];
          t.bind(h, value, false, owner);
          Py_INCREF(owner);
        }
      } else {
        NDArrayHandle h = nullptr;
        PyObject* obj = make_lazy(t.values[value].aval, o.np, &h);  // the slot's reference
        t.bind(h, value, true, obj);
        fresh[v.new_output_of_value[o.value]] = obj;
      }
    }
  }
  for (const GradTarget& g : v.grads) MX_CALL(MXNDArraySetGradState(w.handles[g.variable], 1));  // as backward()
  PyObject* out = finish_result(v, fresh, w);  // borrowed `fresh`: the slots own them
  if (out && ft.backward >= 0 && !R->cfg.whole_step) {
    flush_thread(ts, "backward", user_site());
  } else if (out) {
    if (t.nodes.size() >= R->cfg.max_ops) {
      flush_thread(ts, "op count cap", user_site());
    } else if (segment_due(ts)) {
      uint64_t last = t.nodes.back().content;
      flush_thread(ts, "segment", user_site());
      ts.segment_anchor = last;
    }
  }
  return out;
}

// ------------------------------------------------------------------ the call

enum class Pending { kCapture, kPlain };
thread_local Pending pending_action = Pending::kCapture;

PyObject* call_python(FragmentState& F, Pending what, PyObject* const* args, Py_ssize_t nargs) {
  pending_action = what;
  return PyObject_Vectorcall(F.capture.ptr(), args, nargs, nullptr);
}

PyObject* fragment_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  auto* F = static_cast<FragmentState*>(PyCapsule_GetPointer(self, "minpy_jit.fragment"));
  if (!F) return nullptr;
  try {
    ++F->calls;
    ++counters.calls;
    if (F->disabled || F->capturing || !captures.empty()) return call_python(*F, Pending::kPlain, args, nargs);
    ThreadState& ts = me();
    bool rec = false, train = false;
    MXAutogradIsRecording(&rec);
    MXAutogradIsTraining(&train);
    const bool np = np_shape_mode();
    WalkLease lease;
    Walk& w = *lease.w;
    std::string first_failure;
    for (size_t k = 0; k < F->variants.size(); ++k) {
      std::shared_ptr<Variant> v = F->variants[k];
      if (v->recording != rec || v->training != train || v->np_shape != np) {
        if (k == 0)
          first_failure = std::string("autograd ") +
                          (v->recording != rec ? std::string("recording ") + (v->recording ? "True -> False" : "False -> True")
                           : v->training != train ? std::string("train mode ") + (v->training ? "True -> False" : "False -> True")
                                                  : std::string("numpy shape semantics changed"));
        continue;
      }
      w.release();
      if (!check_variant(*v, args, nargs, w)) {
        if (k == 0) first_failure = describe_failure(*v, w);
        continue;
      }
      if (ts.depth > 0 && ts.site && ts.site->eager) return call_python(*F, Pending::kPlain, args, nargs);
      PyObject* out = nullptr;
      const bool direct = ts.depth == 0 || (F->direct_in_own_scope && ts.depth == 1 && !ts.has_pending());
      if (!direct) {
        out = replay_append(ts, *v, w);
        ++F->appended;
        ++counters.appended;
      } else {
        out = replay_direct(*F, *v, w);
        if (!out && !PyErr_Occurred()) return call_python(*F, Pending::kPlain, args, nargs);
        ++F->direct;
        ++counters.direct;
      }
      if (out) {
        ++F->hits;
        ++v->hits;
        // Most recently used first. Found again by pointer: Python run by the guard walk (a
        // property) may have let another thread change the list meanwhile.
        auto at = std::find(F->variants.begin(), F->variants.end(), v);
        if (at != F->variants.end() && at != F->variants.begin()) {
          F->variants.erase(at);
          F->variants.insert(F->variants.begin(), v);
        }
      }
      return out;
    }
    ++F->misses;
    ++counters.misses;
    F->last_miss = first_failure;
    return call_python(*F, Pending::kCapture, args, nargs);
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    set_python_error(e);
  }
  return nullptr;
}

PyMethodDef fragment_call_def = {
    "fragment", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fragment_call)), METH_FASTCALL,
    "A compiled fragment of a @minpy_jit.function: checks guards and replays, or captures."};

FragmentState* state_of(py::handle capsule) {
  auto* F = static_cast<FragmentState*>(PyCapsule_GetPointer(capsule.ptr(), "minpy_jit.fragment"));
  if (!F) throw py::error_already_set();
  return F;
}

// ------------------------------------------------------------------ capture -> variant

GuardNode::Access parse_access(const std::string& s) {
  if (s == "root") return GuardNode::kRoot;
  if (s == "attr") return GuardNode::kAttr;
  if (s == "item") return GuardNode::kItem;
  if (s == "index") return GuardNode::kIndex;
  if (s == "entry") return GuardNode::kDictEntry;
  if (s == "self") return GuardNode::kSelf;
  throw std::invalid_argument("unknown guard access " + s);
}

GuardNode::Kind parse_kind(const std::string& s) {
  if (s == "array") return GuardNode::kArray;
  if (s == "value") return GuardNode::kValue;
  if (s == "id") return GuardNode::kIdentity;
  if (s == "type") return GuardNode::kType;
  if (s == "seq") return GuardNode::kSeq;
  if (s == "dict") return GuardNode::kDict;
  if (s == "len") return GuardNode::kLen;
  if (s == "freshgrad") return GuardNode::kFreshGrad;
  throw std::invalid_argument("unknown guard kind " + s);
}

// (access, arg, kind, expected, type, len, children, keep, what, where) per node, pre-order.
void parse_guards(const py::list& spec, Variant& v) {
  int leaves = 0;
  for (auto item : spec) {
    py::tuple t = item.cast<py::tuple>();
    GuardNode n;
    n.access = parse_access(t[0].cast<std::string>());
    if (n.access == GuardNode::kRoot || n.access == GuardNode::kIndex) n.index = t[1].cast<int>();
    else if (n.access == GuardNode::kAttr || n.access == GuardNode::kItem)
      n.key = py::reinterpret_steal<py::object>(PyUnicode_InternFromString(t[1].cast<std::string>().c_str()));
    else n.key = t[1];
    n.kind = parse_kind(t[2].cast<std::string>());
    n.expected = t[3];
    if (!t[4].is_none()) n.type = reinterpret_cast<PyTypeObject*>(t[4].ptr());
    n.len = t[5].cast<Py_ssize_t>();
    n.children = t[6].cast<int>();
    n.keep = t[7].cast<int>();
    n.what = t[8].cast<std::string>();
    n.where = t[9].cast<std::string>();
    if (n.kind == GuardNode::kArray) n.leaf = leaves++;
    if (n.keep >= 0) v.num_kept = std::max(v.num_kept, n.keep + 1);
    v.guards.push_back(std::move(n));
  }
  v.num_leaves = leaves;
}

// The same walk as a call's, on the capture's own inputs, recording each array's aval
// instead of checking it. False (with `why`) if the inputs do not fit the spec.
bool record_walk(Variant& v, size_t& i, PyObject* val, Walk& w, std::string* why) {
  size_t before = i;
  if (!walk_node(v, i, val, w, true)) {
    const GuardNode& n = v.guards[w.fail_node >= 0 ? w.fail_node : before];
    *why = n.kind == GuardNode::kArray ? n.what + " is not a dense NDArray of at most 8 dimensions"
                                       : "its inputs changed while it ran (" + n.what + ")";
    return false;
  }
  return true;
}

// A capture that cannot become a variant: why, and the user's line responsible (if known).
struct Refused : std::runtime_error {
  std::string where;
  explicit Refused(const std::string& why, std::string at = "") : std::runtime_error(why), where(std::move(at)) {}
};

std::string aval_text(const AVal& a) { return a.shape_str() + " " + dtype_name(a.dtype); }

// An output of a capture: a trace value of the variant and where a replay puts it (FragmentOutput).
struct CapturedOutput {
  int value, leaf, target_ext;
  bool np;
  int grad = -1;
};

// A captured backward() (node `bw` of the capture's trace; its inputs are the heads, the given
// head gradients, then the variables, backward.cc): one output per variable, written into the
// buffer autograd keeps for it (a GradTarget, found again on every call), and what autograd knew
// of each leaf the recorded ops read (Variant::leaf_role). `grad_handles`: the trace's handles
// on those buffers, which hold the gradients.
void add_grad_targets(const Trace& t, size_t n0, int bw, const std::vector<int>& vmap, const Walk& w, Variant& v,
                      std::vector<CapturedOutput>* outputs, std::unordered_set<NDArrayHandle>* grad_handles) {
  auto leaf_of_value = [&](int value) {
    const int fv = vmap[value];
    return fv >= 0 && fv < static_cast<int>(v.ext_leaf.size()) ? v.ext_leaf[fv] : -1;
  };
  v.leaf_role.assign(v.num_leaves, -1);
  for (int k = static_cast<int>(n0); k < bw; ++k)
    for (int x : t.nodes[k].in) {
      const int leaf = t.values[x].node < static_cast<int>(n0) ? leaf_of_value(x) : -1;
      if (leaf >= 0) v.leaf_role[leaf] = autograd_code(w.handles[leaf]);
    }
  const Node& n = t.nodes[bw];
  const size_t first_x = n.in.size() - n.out.size();
  for (size_t j = 0; j < n.out.size(); ++j) {
    GradTarget g;
    g.variable = leaf_of_value(n.in[first_x + j]);
    if (g.variable < 0) throw Refused("backward() differentiates an array that no input reaches");
    NDArrayHandle var = w.handles[g.variable];
    NDArrayHandle buf = grad_buffer_of(var);
    auto held = buf ? t.grad_buffers.find(chunk_of(buf)) : t.grad_buffers.end();
    auto slot = held != t.grad_buffers.end() ? t.slots.find(held->second) : t.slots.end();
    if (slot == t.slots.end() || !peek_aval(buf, &g.aval) || autograd_code(var) != v.leaf_role[g.variable])
      throw Refused("internal: a gradient of backward() is not where autograd keeps it");
    // The buffer's last value: backward()'s, or what the statements wrote into it since
    // (AdaDelta's update scales the gradient in place), computed by them all the same.
    const int last = slot->second.value;
    if (last != n.out[j] && (t.values[last].node < bw || vmap[last] < 0))
      throw Refused("internal: a gradient holds a value from before backward()");
    grad_handles->insert(held->second);
    for (int i = 0; i < v.num_leaves; ++i)
      if (chunk_of(w.handles[i]) == chunk_of(buf)) g.aliases.push_back(i);
    outputs->push_back({vmap[last], -3, -1, false, static_cast<int>(v.grads.size())});
    v.grads.push_back(std::move(g));
  }
  // Trainer.step's check that each gradient is new (a guard on the call) is met by backward().
  for (size_t i = 1; i < v.guards.size(); ++i) {
    GuardNode& fresh = v.guards[i];
    const GuardNode& arr = v.guards[i - 1];  // its array: the guard before it (capture.py)
    if (fresh.kind != GuardNode::kFreshGrad || arr.kind != GuardNode::kArray || arr.leaf < 0) continue;
    for (const GradTarget& g : v.grads)
      if (v.same_as[arr.leaf] == v.same_as[g.variable]) fresh.set_inside = true;
  }
}

// Builds a variant from what the capture recorded; throws Refused with the reason.
std::shared_ptr<Variant> build_variant(const Capture& c, ThreadState& ts, py::tuple args, py::list guard_spec,
                                       py::list result_arrays, py::list result_spec, py::list effects, bool bare) {
  Trace& t = ts.trace;
  if (!c.touched.empty())
    throw Refused("it reads or changes array data outside the recorded ops (" + c.touched + ")",
                  R->sources.str(c.touched_loc));
  if (ts.flush_ordinal != c.ordinal || t.nodes.size() < c.n0) {
    const FlushEvent* ev = R->stats.events.empty() ? nullptr : &R->stats.events.back();
    throw Refused("the recorded ops were flushed before it ended (" + (ev ? ev->cause : std::string("?")) + ")",
                  ev ? ev->where : std::string());
  }
  if (fallback_total() != c.fallbacks) throw Refused("an op ran eagerly (it cannot be recorded)");
  // One launch would hand a run-time failure to every result (failures.h): such ops run in Python.
  for (size_t i = c.n0; i < t.nodes.size(); ++i)
    if (t.nodes[i].op->can_fail)
      throw Refused(t.nodes[i].op->name + " can fail while it runs (its errors must reach only what they reach eagerly)",
                    R->sources.str(t.nodes[i].loc));
  // The statements may set the autograd state themselves (`with autograd.record():`): then the
  // trace they recorded began with them (a change flushes what came before, refused above), and
  // its state is the graph's; the state at the call stays the variant's guard.
  const bool recorded_here = t.nodes.size() > c.n0;
  if (recorded_here && c.n0 > 0 && (t.recording != c.rec || t.training != c.train))
    throw Refused("the autograd state changed inside it");
  const int bw = t.backward;  // a backward() the statements ran inside the graph (backward.cc)
  // ... and a backward() inside them differentiates only ops they recorded themselves.
  if (bw >= 0 && (c.n0 > 0 || !autograd_peek_works())) throw Refused("it runs backward() on ops recorded before it");

  auto v = std::make_shared<Variant>();
  v->recording = c.rec;
  v->training = c.train;
  v->np_shape = c.np;
  v->bare_result = bare;
  parse_guards(guard_spec, *v);

  // Leaves: the arrays the inputs reach, as the guards will find them on each call.
  WalkLease lease;
  Walk& w = *lease.w;
  w.reset(*v);
  {
    size_t i = 0;
    std::string why;
    while (i < v->guards.size()) {
      const GuardNode& root = v->guards[i];
      if (root.index >= static_cast<int>(args.size())) throw Refused("bad guard root");
      if (!record_walk(*v, i, args[root.index].ptr(), w, &why)) throw Refused(why);
    }
  }
  const int L = v->num_leaves;
  std::unordered_map<NDArrayHandle, int> leaf_of;
  v->same_as.assign(L, 0);
  v->written.assign(L, 0);
  for (int i = 0; i < L; ++i) {
    auto it = leaf_of.emplace(w.handles[i], i).first;
    v->same_as[i] = it->second;
  }
  std::unordered_map<int, NDArrayHandle> holder_at_start;  // value -> an array holding it at the start
  for (const auto& kv : c.start) holder_at_start.emplace(kv.second, kv.first);
  std::unordered_set<NDArrayHandle> owned(t.owned.begin(), t.owned.end());

  Trace& ft = v->trace;
  ft.start(recorded_here ? t.recording : c.rec, recorded_here ? t.training : c.train, c.np);
  ft.launched_alone = true;
  std::vector<int> vmap(t.values.size(), -1);
  std::vector<int> ext_of_leaf(L, -1);
  auto describe_array = [&](int value) {
    const Value& val = t.values[value];
    std::string s = "an array " + aval_text(val.aval);
    if (val.node >= 0 && t.nodes[val.node].loc >= 0) s += " computed at " + R->sources.str(t.nodes[val.node].loc);
    return s;
  };
  int reading_loc = -1;  // the node being mapped (for messages)
  auto map_external = [&](int value) -> int {
    if (vmap[value] >= 0) return vmap[value];
    const Value& val = t.values[value];
    NDArrayHandle h = nullptr;
    if (value < static_cast<int>(c.v0)) {
      auto it = holder_at_start.find(value);
      if (it == holder_at_start.end())
        throw Refused("it reads " + describe_array(value) + " that no input reaches", R->sources.str(reading_loc));
      h = it->second;
    } else if (val.node < 0) {
      h = val.ext;
    } else {
      throw Refused("internal: value %" + std::to_string(value) + " used before it was produced");
    }
    auto lf = leaf_of.find(h);
    int id;
    if (lf != leaf_of.end()) {
      id = ft.value_of(h, &val.aval, nullptr);
      v->ext_leaf.resize(ft.values.size(), -1);
      v->ext_leaf[id] = lf->second;
      ext_of_leaf[lf->second] = id;
    } else if (owned.count(h)) {  // a scalar the recorder lifted into a one-element array
      NDArrayHandle copy = copy_constant(h, val.aval);
      id = ft.value_of(copy, &val.aval, nullptr);
      v->constants.resize(ft.values.size(), nullptr);
      v->constants[id] = copy;
    } else {
      throw Refused("it reads " + describe_array(value) +
                        " that is not reachable from its inputs (arguments, globals, closure variables, attributes)",
                    R->sources.str(reading_loc));
    }
    vmap[value] = id;
    return id;
  };

  std::vector<int> in;
  std::vector<AVal> outs;
  std::vector<int> mutated;
  for (size_t k = c.n0; k < t.nodes.size(); ++k) {
    const Node& n = t.nodes[k];
    reading_loc = n.loc;
    in.clear();
    for (int x : n.in) {
      const Value& xv = t.values[x];
      if (xv.node >= static_cast<int>(c.n0)) in.push_back(vmap[x]);
      else in.push_back(map_external(x));
    }
    outs.clear();
    for (int o : n.out) outs.push_back(t.values[o].aval);
    mutated.clear();
    for (int m : n.mutated)
      for (size_t p = 0; p < n.in.size(); ++p)
        if (n.in[p] == m) {
          mutated.push_back(static_cast<int>(p));
          break;
        }
    std::vector<Attr> attrs = n.attrs;
    const uint64_t h = hash_attrs(attrs);
    int first = ft.add_node(n.op, std::move(attrs), h, in, outs, mutated, n.loc);
    v->attr_hash.push_back(h);
    for (size_t j = 0; j < n.out.size(); ++j) vmap[n.out[j]] = first + static_cast<int>(j);
    if (static_cast<int>(k) == bw) ft.backward = static_cast<int>(ft.nodes.size()) - 1;
  }
  v->ext_leaf.resize(ft.values.size(), -1);
  v->constants.resize(ft.values.size(), nullptr);
  v->adds_gradient.assign(L, -1);
  if (c.rec)
    for (int i = 0; i < L; ++i)
      if (ext_of_leaf[i] >= 0) v->adds_gradient[i] = ft.values[ext_of_leaf[i]].adds_gradient ? 1 : 0;

  auto produced_here = [&](int value) {
    return value >= 0 && t.values[value].node >= static_cast<int>(c.n0) && vmap[value] >= 0;
  };

  // In-place writes: leaves whose array now holds a value the fragment produced.
  std::vector<CapturedOutput> outputs;
  for (int i = 0; i < L; ++i) {
    if (v->same_as[i] != i) continue;
    auto it = t.slots.find(w.handles[i]);
    if (it == t.slots.end()) continue;
    auto st = c.start.find(w.handles[i]);
    if (st != c.start.end() ? st->second == it->second.value : it->second.value == it->second.ext_value) continue;
    if (!produced_here(it->second.value)) throw Refused("internal: a written input holds a foreign value");
    outputs.push_back({vmap[it->second.value], i, ext_of_leaf[i], false});
    v->written[i] = 1;
  }
  // The gradients backward() wrote: into each variable's buffer, found again on every call.
  std::unordered_set<NDArrayHandle> grad_handles;
  if (bw >= 0) add_grad_targets(t, c.n0, bw, vmap, w, *v, &outputs, &grad_handles);
  // Anything else written that existed before: a write the replay would not make.
  for (const auto& kv : t.slots) {
    if (leaf_of.count(kv.first) || grad_handles.count(kv.first)) continue;
    auto st = c.start.find(kv.first);
    if (st == c.start.end()) {
      if (kv.second.ours || kv.second.value == kv.second.ext_value) continue;  // new, or only read
      throw Refused("it writes into an array that is not reachable from its inputs");
    }
    if (st->second != kv.second.value)
      throw Refused("it writes into " + describe_array(st->second) + " that is not reachable from its inputs");
  }
  // Arrays of the result: inputs passed through, or new arrays of the fragment.
  std::vector<std::pair<char, int>> result_array;  // ('L', leaf) or ('V', ft value)
  for (auto item : result_arrays) {
    PyObject* obj = item.ptr();
    NDArrayHandle h = handle_of(obj);
    auto lf = leaf_of.find(h);
    if (lf != leaf_of.end()) {
      result_array.push_back({'L', lf->second});
      continue;
    }
    auto it = t.slots.find(h);
    if (it == t.slots.end() || c.start.count(h) || !it->second.ours || !produced_here(it->second.value))
      throw Refused("it returns an array that is neither an input nor computed by it");
    int fv = vmap[it->second.value];
    bool np = Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(R->ndarray_cls.ptr());
    if (std::none_of(outputs.begin(), outputs.end(), [&](const CapturedOutput& o) { return o.value == fv && o.leaf == -1; }))
      outputs.push_back({fv, -1, -1, np});
    result_array.push_back({'V', fv});
  }
  // Effectful nodes (random draws, state updates) run even when nobody reads them.
  for (const Node& n : ft.nodes) {
    if ((!n.op->effectful && n.mutated.empty()) || n.out.empty()) continue;
    if (std::any_of(n.out.begin(), n.out.end(), [&](int val) {
          return std::any_of(outputs.begin(), outputs.end(), [&](const CapturedOutput& o) { return o.value == val; });
        }))
      continue;
    outputs.push_back({n.out[0], -2, -1, false});
  }
  std::sort(outputs.begin(), outputs.end(), [](const CapturedOutput& a, const CapturedOutput& b) { return a.value < b.value; });
  v->new_output_of_value.assign(ft.values.size(), -1);
  for (const CapturedOutput& o : outputs) {
    v->outputs.push_back({o.value, o.leaf, o.target_ext, o.np, o.grad});
    if (o.leaf == -1) v->new_output_of_value[o.value] = v->num_new++;
    if (o.leaf == -2) v->scratch.push_back(new_lazy_array(ft.values[o.value].aval));
  }
  // Writes through views: one graph cannot order them (see aliasing_holds).
  for (int i = 0; i < L; ++i)
    if (v->written[i])
      for (int j = 0; j < L; ++j)
        if (w.handles[j] != w.handles[i] && chunk_of(w.handles[j]) == chunk_of(w.handles[i]))
          throw Refused("it writes into an input that shares memory with another input (a view)");

  // The result recipe.
  for (auto item : result_spec) {
    py::tuple r = item.cast<py::tuple>();
    std::string kind = r[0].cast<std::string>();
    ResultNode n;
    if (kind == "array") {
      auto ra = result_array.at(r[1].cast<size_t>());
      if (ra.first == 'L') {
        n.kind = ResultNode::kLeafArray;
        n.index = ra.second;
      } else {
        n.kind = ResultNode::kNewArray;
        n.index = v->new_output_of_value[ra.second];
      }
    } else if (kind == "kept") {
      n.kind = ResultNode::kKept;
      n.index = r[1].cast<int>();
    } else if (kind == "const") {
      n.kind = ResultNode::kConst;
      n.value = r[1];
    } else {
      n.kind = kind == "tuple" ? ResultNode::kTuple : kind == "list" ? ResultNode::kList : ResultNode::kDict;
      n.children = r[1].cast<int>();
    }
    v->result.push_back(std::move(n));
  }
  for (auto item : effects) {  // (kind, kept slot, key, delta)
    py::tuple e = item.cast<py::tuple>();
    const std::string kind = e[0].cast<std::string>();
    if (kind == "set") {
      v->effects.push_back({Effect::kAttrSet, e[1].cast<int>(), e[2], 0, e[3]});
      continue;
    }
    Effect::Kind k = kind == "attr" ? Effect::kAttrDelta : kind == "item" ? Effect::kItemDelta : Effect::kClearGrad;
    v->effects.push_back({k, e[1].cast<int>(), e[2], e[3].cast<long long>(), py::object()});
  }

  // The structural key, as a flush of the same trace would compute it (shares executors).
  v->key = ft.key;
  for (const auto& o : v->outputs) {
    v->key.add(0x0A7ULL + static_cast<uint64_t>(o.value));
    v->key.add(static_cast<uint64_t>(o.target_ext + 2));
  }
  return v;
}

// ------------------------------------------------------------------ info

py::dict guard_info(const GuardNode& n, const Variant& v) {
  py::dict d;
  static const char* kinds[] = {"array", "value", "id", "type", "seq", "dict", "len", "freshgrad"};
  d["kind"] = kinds[n.kind];
  d["what"] = n.what;
  d["where"] = n.where;
  std::string cond;
  switch (n.kind) {
    case GuardNode::kArray:
      cond = "shape " + n.aval.shape_str() + ", " + dtype_name(n.aval.dtype) + ", " + ctx_str(n.aval.dev_type, n.aval.dev_id);
      // read under autograd recording: whether it is a grad_req='add' variable is guarded too
      if (n.leaf >= 0 && static_cast<size_t>(n.leaf) < v.adds_gradient.size() && v.adds_gradient[n.leaf] >= 0)
        cond += v.adds_gradient[n.leaf] ? ", grad_req 'add'" : ", grad_req not 'add'";
      break;
    case GuardNode::kValue:
      cond = "== " + repr_of(n.expected.ptr()) + " (" + type_name(n.type) + ")";
      break;
    case GuardNode::kIdentity:
      cond = "is " + repr_of(n.expected.ptr());
      break;
    case GuardNode::kType:
      cond = "type " + type_name(n.type);
      break;
    case GuardNode::kSeq:
      cond = type_name(n.type) + " of length " + std::to_string(n.len);
      break;
    case GuardNode::kDict:
      cond = "dict of length " + std::to_string(n.len) + " (same keys, same order)";
      break;
    case GuardNode::kLen:
      cond = "length " + std::to_string(n.len);
      break;
    case GuardNode::kFreshGrad:
      cond = "gradient written since the last Trainer step";
      break;
  }
  d["check"] = cond;
  return d;
}

py::dict variant_info(FragmentState& F, Variant& v, bool compile_graph) {
  py::dict d;
  py::list guards;
  for (const auto& n : v.guards) guards.append(guard_info(n, v));
  d["guards"] = guards;
  d["recording"] = v.recording;
  d["training"] = v.training;
  d["graph_recording"] = v.trace.recording;  // the statements' own `with autograd.record():`
  d["gradients"] = v.grads.size();             // buffers its backward() writes
  d["ops"] = v.trace.nodes.size();
  d["leaves"] = v.num_leaves;
  d["hits"] = v.hits;
  d["key"] = key_str(v.key);
  d["writes_inputs"] = std::count(v.written.begin(), v.written.end(), 1);
  // graph inputs run as CachedOp parameters (same arrays every call), 0 when not (yet) in use
  d["param_inputs"] = v.stable_inputs.op ? std::count(v.stable_inputs.stable.begin(), v.stable_inputs.stable.end(), 1) : 0;
  d["new_arrays"] = v.num_new;
  d["effects"] = v.effects.size();
  if (compile_graph) ensure_executor(F, v);
  d["eager_only"] = v.eager_only;
  d["compile_error"] = v.compile_error;
  d["ir"] = v.exe ? v.exe->ir : std::string();
  d["batched_projections"] = v.exe ? v.exe->batched_projections : 0;
  d["fc_kernels"] = v.exe ? v.exe->fc_kernels : 0;
  d["graph_nodes"] = v.exe ? v.exe->num_nodes : 0;
  // the steps, for to_python (same form as graphs()' entries)
  py::list steps;
  for (const auto& st : steps_of(v.trace)) {
    py::dict sd;
    sd["value"] = st.value;
    sd["input"] = st.is_input;
    sd["op"] = st.op;
    py::list attrs;
    for (const auto& a : st.attrs) attrs.append(py::make_tuple(a.key, a.val));
    sd["attrs"] = attrs;
    sd["in"] = st.in;
    sd["nout"] = st.nout;
    sd["shape"] = py::tuple(py::cast(std::vector<int64_t>(st.aval.dims, st.aval.dims + st.aval.ndim)));
    sd["dtype"] = dtype_name(st.aval.dtype);
    sd["where"] = st.loc >= 0 ? R->sources.str(st.loc) : std::string();
    steps.append(sd);
  }
  d["steps"] = steps;
  py::list outs;
  for (const auto& o : v.outputs) outs.append(py::make_tuple(o.value, o.leaf));
  d["outputs"] = outs;
  return d;
}

}  // namespace

Variant::~Variant() {
  for (auto h : constants)
    if (h) MXNDArrayFree(h);
  for (auto h : scratch) MXNDArrayFree(h);
}

bool capture_open() { return !captures.empty(); }

void note_data_access(const char* what) {
  if (captures.empty() || !captures.back().touched.empty()) return;
  if (captures.back().grad_state_ok && std::strcmp(what, kGradStateSet) == 0) return;
  captures.back().touched = what;
  captures.back().touched_loc = R->sources.capture();
  if (captures.back().strict)  // compiling ahead of time: nothing may run on the placeholders
    throw std::runtime_error(std::string("it needs array data (") + what + ") to run");
}

void register_fragment_api(py::module_& m) {
  m.def("fragment_new", [](const std::string& name, py::object capture) {
    auto* F = new FragmentState();
    F->name = name;
    F->capture = std::move(capture);
    py::object capsule = py::reinterpret_steal<py::object>(PyCapsule_New(F, "minpy_jit.fragment", [](PyObject* cap) {
      delete static_cast<FragmentState*>(PyCapsule_GetPointer(cap, "minpy_jit.fragment"));
    }));
    py::object call = py::reinterpret_steal<py::object>(PyCFunction_New(&fragment_call_def, capsule.ptr()));
    return py::make_tuple(capsule, call);
  }, "A fragment's state (a capsule) and its call (guard check + replay, or capture on a miss).");

  m.def("fragment_pending", [](py::handle cap) {
    FragmentState* F = state_of(cap);
    return py::make_tuple(pending_action == Pending::kCapture ? "capture" : "plain", F->last_miss);
  }, "Why the fragment called back into Python: ('capture' | 'plain', the guard that failed).");

  m.def("fragment_capture_begin", [](py::handle cap, bool strict, bool own_segment) {
    FragmentState* F = state_of(cap);
    ThreadState& ts = me();
    if (ts.depth == 0) throw std::runtime_error("fragment capture outside a jit() scope");
    // Statements that set the autograd state or run backward() record a segment of their own
    // (build_variant): what is pending runs first.
    if (own_segment && (!ts.trace.empty() || !ts.batch.empty())) flush_thread(ts, "a fragment's own autograd segment", user_site());
    // A trace left open by backward() (backward.cc) runs first: a fragment's ops are captured
    // under one autograd state, from a trace that holds no backward node.
    if (ts.trace.backward >= 0) flush_thread(ts, "backward", user_site());
    // ... and from the thread's only open trace (record.cc keeps one per context).
    if (!ts.parked.empty()) flush_thread(ts, "context switch", user_site());
    Capture c;
    c.F = F;
    c.n0 = ts.trace.nodes.size();
    c.v0 = ts.trace.values.size();
    c.ordinal = ts.flush_ordinal;
    MXAutogradIsRecording(&c.rec);
    MXAutogradIsTraining(&c.train);
    c.np = np_shape_mode();
    c.fallbacks = fallback_total();
    c.strict = strict;
    for (const auto& kv : ts.trace.slots) c.start.emplace(kv.first, kv.second.value);
    captures.push_back(std::move(c));
    F->capturing = true;
    ++ts.capturing;
  }, py::arg("cap"), py::arg("strict") = false, py::arg("own_segment") = false);

  m.def("fragment_capture_end", [](py::handle cap, py::tuple args, py::list guard_spec, py::list result_arrays,
                                   py::list result_spec, py::list effects, bool bare) -> py::object {
    FragmentState* F = state_of(cap);
    if (captures.empty() || captures.back().F != F) throw std::runtime_error("no capture of this fragment is open");
    Capture c = std::move(captures.back());
    captures.pop_back();
    F->capturing = false;
    ThreadState& ts = me();
    --ts.capturing;
    ++counters.captures;
    try {
      auto v = build_variant(c, ts, args, guard_spec, result_arrays, result_spec, effects, bare);
      F->variants.insert(F->variants.begin(), v);
      return py::none();
    } catch (const Refused& e) {
      ++counters.refused;
      return py::make_tuple(std::string(e.what()), e.where);
    }
  }, "Turns the open capture into a variant; returns None, or (why it cannot be replayed, 'file:line').");

  m.def("fragment_capture_abort", [](py::handle cap) {
    FragmentState* F = state_of(cap);
    if (captures.empty() || captures.back().F != F) return;
    captures.pop_back();
    F->capturing = false;
    --me().capturing;
  });

  m.def("fragment_capture_allow_grad_state", [](bool ok) {
    // capture.py runs a Trainer.step it models: the fresh-gradient flags it clears are effects
    if (!captures.empty()) captures.back().grad_state_ok = ok;
  });

  m.def("fragment_discard_trace", []() {
    // Ahead-of-time compilation ran the statements on placeholder arrays: drop what they
    // recorded without running it (nothing was executed, nothing is written).
    ThreadState& ts = me();
    R->pending -= std::min(R->pending, ts.trace.nodes.size());
    std::vector<PyObject*> drop;
    for (auto& kv : ts.trace.slots)
      if (kv.second.owner) drop.push_back(static_cast<PyObject*>(kv.second.owner));
    for (auto h : ts.trace.owned) MXNDArrayFree(h);
    ts.trace.clear();
    for (PyObject* o : drop) Py_DECREF(o);
  });

  m.def("fragment_variants", [](py::handle cap) { return state_of(cap)->variants.size(); });

  m.def("fragment_info", [](py::handle cap, bool compile_graphs) {
    FragmentState* F = state_of(cap);
    py::dict d;
    d["name"] = F->name;
    d["calls"] = F->calls;
    d["hits"] = F->hits;
    d["misses"] = F->misses;
    d["direct"] = F->direct;
    d["appended"] = F->appended;
    d["disabled"] = F->disabled;
    d["last_miss"] = F->last_miss;
    py::list vs;
    for (auto& v : F->variants) vs.append(variant_info(*F, *v, compile_graphs));
    d["variants"] = vs;
    return d;
  }, py::arg("cap"), py::arg("compile_graphs") = false);

  m.def("fragment_set_disabled", [](py::handle cap, bool off) { state_of(cap)->disabled = off; });
  m.def("fragment_set_direct_in_own_scope", [](py::handle cap, bool on) { state_of(cap)->direct_in_own_scope = on; });
  m.def("fragment_clear", [](py::handle cap) {
    FragmentState* F = state_of(cap);
    F->variants.clear();
    F->last_miss.clear();
  });

  m.def("fragment_compile", [](py::handle cap) {
    // Builds the executors of all variants now (ahead-of-time compilation).
    FragmentState* F = state_of(cap);
    std::string errors;
    for (auto& v : F->variants) {
      ensure_executor(*F, *v);
      if (v->eager_only) errors += v->compile_error;
    }
    return errors;
  });

  m.def("fragment_guard_bench", [](py::handle cap, py::tuple args, int n) {
    // ns per guard check of the most recent variant on `args` (benchmarks/fragment_guards.py)
    FragmentState* F = state_of(cap);
    if (F->variants.empty()) return -1.0;
    const Variant& v = *F->variants.front();
    std::vector<PyObject*> a;
    for (auto x : args) a.push_back(x.ptr());
    bool ok = true;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      bool rec = false, train = false;
      MXAutogradIsRecording(&rec);
      MXAutogradIsTraining(&train);
      ok &= rec == v.recording && train == v.training && np_shape_mode() == v.np_shape;
      WalkLease lease;
      ok &= check_variant(v, a.data(), static_cast<Py_ssize_t>(a.size()), *lease.w);
    }
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
    return ok ? ns : -ns;
  });

  m.def("fragment_stats", []() {
    py::dict d;
    d["calls"] = counters.calls;
    d["replayed"] = counters.direct;
    d["appended"] = counters.appended;
    d["misses"] = counters.misses;
    d["captures"] = counters.captures;
    d["refused"] = counters.refused;
    return d;
  });
  m.def("fragment_reset_stats", []() { counters = FragmentCounters(); });
}

}  // namespace minpy
