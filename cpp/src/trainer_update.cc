// Gluon's Trainer._update in one C call while a scope is open (minpy_jit/trainer.py).
//
// Trainer.step spends most of its time in Python, per parameter: the fresh-gradient check
// and reset, the Updater's state lookups, the optimizer's update count, learning rate and
// weight decay, and an op wrapper per weight (or per 4 weights). For the optimizers whose
// update rule our kernels know (SGD with or without momentum, NAG, Adam, RMSProp, AdaGrad;
// SGD's and NAG's multi_precision form) the same bookkeeping runs here over all parameters,
// with the same effects on the Python objects: fresh flags cleared, `_set_current_context`,
// states created by the optimizer's own `create_state_multi_precision` or synced by the
// Updater's `sync_state_context` where the Updater would, update counts and `num_update`
// stepped chunk by chunk as MXNet's optimizer steps them (the lr scheduler called at the
// same update counts). The updates of each context are recorded as one call of our
// multi-tensor kernel (updates.h) -- the call the per-op path builds at compile time from the
// per-weight ops -- with the float32 values MXNet would parse from each op's attributes.
//
// Whatever this does not model returns false before anything changed, and the caller runs
// MXNet's Python _update (its ops recorded one by one as before), counted with the reason:
// another optimizer class (a subclass too: its update is Python we do not read), a kvstore
// that updates, AMP's loss scaler, a stale gradient (MXNet raises), sparse, float64 or GPU
// arrays, a scheduler of a type not from mxnet.lr_scheduler, ...
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "mxapi.h"
#include "mxparse.h"
#include "runtime.h"
#include "update_launch.h"

namespace minpy {

py::object invoke(py::args args);  // record.cc: the interceptor

namespace {

enum class Rule { kSgd, kNag, kAdam, kRmsProp, kAdaGrad };

// Set once by minpy_jit/trainer.py: the classes whose behaviour this file reproduces.
struct Known {
  py::object updater_cls, parameter_cls, sqrt;
  std::vector<std::pair<py::object, Rule>> optimizers;  // exact classes only
  std::vector<py::object> schedulers;  // mxnet.lr_scheduler's: called again at one count, same result
  bool set = false;
};
Known* K = nullptr;

// Interned attribute names, made once per string literal (keyed by its address).
PyObject* name(const char* s) {
  static std::unordered_map<const char*, PyObject*> names;
  auto it = names.find(s);
  if (it != names.end()) return it->second;
  return names[s] = PyUnicode_InternFromString(s);
}

py::object attr(PyObject* obj, const char* key) {
  PyObject* v = PyObject_GetAttr(obj, name(key));
  if (!v) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(v);
}

py::object attr_or_none(PyObject* obj, const char* key) {
  PyObject* v = PyObject_GetAttr(obj, name(key));
  if (!v) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    return py::none();
  }
  return py::reinterpret_steal<py::object>(v);
}

bool truthy(PyObject* v) {
  const int r = PyObject_IsTrue(v);
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

py::object steal(PyObject* v) {
  if (!v) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(v);
}

}  // namespace

float mx_value(PyObject* v, Text how) {
  struct Memo {
    uint64_t bits = 0;
    int how = -1;
    float f = 0;
  };
  static Memo memo[256];  // the GIL is held
  Memo* slot = nullptr;
  uint64_t bits = 0;
  if (PyFloat_CheckExact(v)) {
    const double d = PyFloat_AS_DOUBLE(v);
    std::memcpy(&bits, &d, sizeof bits);
    slot = &memo[(mix64(bits) + static_cast<uint64_t>(how)) & 255];
    if (slot->how == static_cast<int>(how) && slot->bits == bits) return slot->f;
  }
  py::object text;
  if (how == Text::kItem) text = steal(PyObject_Repr(v));
  else if (how == Text::kField) text = steal(PyObject_Str(v));
  else text = steal(PyObject_Str(steal(PyNumber_Float(v)).ptr()));
  Py_ssize_t n = 0;
  const char* c = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
  if (!c) throw py::error_already_set();
  const std::string s(c, n);
  const float f = how == Text::kField ? mx_float_field(s) : how == Text::kItem ? mx_tuple_item(s) : mx_scalar_as_float(s);
  if (slot) *slot = Memo{bits, static_cast<int>(how), f};
  return f;
}

namespace {

// exact_float, remembered: a step writes the same few rates and decays for every weight.
const std::string& exact_text(float f) {
  struct Memo {
    uint32_t bits = 0;
    bool set = false;
    std::string text;
  };
  static Memo memo[64];  // the GIL is held
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  Memo& m = memo[mix64(bits) & 63];
  if (!m.set || m.bits != bits) m = Memo{bits, true, exact_float(f)};
  return m.text;
}

std::string exact(PyObject* v, Text how) { return exact_text(mx_value(v, how)); }

// Shape, dtype and context of an array now (its pending value's if the trace holds it);
// false for sparse storage.
bool dense_aval(const Trace& t, NDArrayHandle h, AVal* a) {
  auto it = t.slots.find(t.canonical(h));
  if (it != t.slots.end()) {
    *a = t.values[it->second.value].aval;
    return true;
  }
  if (peek_works() && peek_aval(h, a)) return true;
  if (stype_of(h) != 0) return false;
  *a = aval_of_c_api(h);
  return true;
}

constexpr int kFloat32 = 0, kFloat16 = 2, kCPU = 1;

// One weight to update on one context.
struct Entry {
  PyObject* index;  // the parameter's index (a Python int, owned by `indices`)
  PyObject* weight;
  PyObject* grad;
  AVal aval;  // the weight's
};

struct Optimizer {
  Rule rule;
  PyObject* obj;
  bool mp = false;  // multi_precision (float16 weights then carry a float32 master copy)
  double momentum = 0;
  bool aggregate = false;  // SGD through an aggregating Updater: chunks of aggregate_num
  Py_ssize_t chunk = 1;
};

struct Decline {
  std::string why;
};

// The float32 states of one weight as the kernel takes them, in the kernel's order; false if
// the Updater's state is not what the rule's create_state makes (loaded, or changed by hand).
bool kernel_states(const Trace& t, const Optimizer& o, bool mp, PyObject* state, const AVal& w,
                   std::vector<PyObject*>* out) {
  auto array = [&](PyObject* a) {
    if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(R->ndarray_cls.ptr())) return false;
    AVal s;
    if (!dense_aval(t, handle_of(a), &s)) return false;
    if (s.dtype != kFloat32 || s.size() != w.size() || s.dev_type != w.dev_type || s.dev_id != w.dev_id) return false;
    out->push_back(a);
    return true;
  };
  auto tuple_of = [&](PyObject* s, Py_ssize_t n) { return PyTuple_Check(s) && PyTuple_GET_SIZE(s) == n; };
  if (mp) {  // SGD, NAG: (momentum or None, master copy)
    if (!tuple_of(state, 2)) return false;
    PyObject* mom = PyTuple_GET_ITEM(state, 0);
    if ((o.momentum > 0) != (mom != Py_None)) return false;
    return (mom == Py_None || array(mom)) && array(PyTuple_GET_ITEM(state, 1));
  }
  switch (o.rule) {
    case Rule::kSgd:
    case Rule::kNag:
      if (o.momentum > 0) return array(state);
      return state == Py_None;
    case Rule::kAdam:
      return tuple_of(state, 2) && array(PyTuple_GET_ITEM(state, 0)) && array(PyTuple_GET_ITEM(state, 1));
    case Rule::kRmsProp: {
      const Py_ssize_t n = truthy(attr(o.obj, "centered").ptr()) ? 3 : 1;
      if (!tuple_of(state, n)) return false;
      for (Py_ssize_t k = 0; k < n; ++k)
        if (!array(PyTuple_GET_ITEM(state, k))) return false;
      return true;
    }
    case Rule::kAdaGrad: return array(state);
  }
  return false;
}

// Optimizer._get_lrs / _get_wds for one index: `base * multiplier`, the multiplier looked up
// as MXNet does (param_dict, then the optimizer's dict by index, then by name).
py::object times_multiplier(PyObject* base, PyObject* index, PyObject* param_dict, PyObject* by_index,
                            PyObject* idx2name, const char* param_attr) {
  PyObject* p = PyDict_GetItemWithError(param_dict, index);
  py::object m;
  if (p) {
    m = attr(p, param_attr);
  } else if (PyErr_Occurred()) {
    throw py::error_already_set();
  } else if (PyObject* v = PyDict_GetItemWithError(by_index, index)) {
    m = py::reinterpret_borrow<py::object>(v);
  } else if (PyErr_Occurred()) {
    throw py::error_already_set();
  } else if (PyObject* nm = PyDict_GetItemWithError(idx2name, index)) {
    PyObject* v = PyDict_GetItemWithError(by_index, nm);
    if (!v && PyErr_Occurred()) throw py::error_already_set();
    m = v ? py::reinterpret_borrow<py::object>(v) : py::float_(1.0);
  } else if (PyErr_Occurred()) {
    throw py::error_already_set();
  } else {
    return py::reinterpret_borrow<py::object>(base);
  }
  return steal(PyNumber_InPlaceMultiply(base, m.ptr()));
}

class TrainerStep {
 public:
  TrainerStep(ThreadState& ts, PyObject* trainer, bool ignore_stale) : ts_(ts), trainer_(trainer), ignore_stale_(ignore_stale) {}

  // Declines (before changing anything) with the reason, or does the whole update.
  void run() {
    check_trainer();
    collect();
    for (auto& e : entries_)
      for (const Entry& x : e) set_fresh(handle_of(x.weight), false);
    for (size_t c = 0; c < entries_.size(); ++c)
      if (!entries_[c].empty()) update(c);
  }

 private:
  ThreadState& ts_;
  PyObject* trainer_;
  bool ignore_stale_;
  Optimizer o_{};
  py::list updaters_;
  std::vector<std::vector<Entry>> entries_;  // per updater (context)
  // per-step optimizer attributes
  py::object lr_, scheduler_, wd_, param_dict_, lr_mult_, wd_mult_, idx2name_;
  py::object sched_count_, sched_lr_;  // the scheduler's last call: a known scheduler gives the same again

  [[noreturn]] void decline(const std::string& why) { throw Decline{why}; }

  void check_trainer() {
    if (!attr_or_none(trainer_, "_amp_loss_scaler").is_none()) decline("AMP's loss scaler");
    py::object kv = attr(trainer_, "_kvstore");
    if (truthy(kv.ptr()) && truthy(attr(trainer_, "_update_on_kvstore").ptr())) decline("the kvstore updates");
    py::object opt = attr(trainer_, "_optimizer");
    o_.obj = opt.ptr();
    bool known = false;
    for (const auto& kv2 : K->optimizers)
      if (reinterpret_cast<PyObject*>(Py_TYPE(opt.ptr())) == kv2.first.ptr()) o_.rule = kv2.second, known = true;
    if (!known) decline(std::string("optimizer ") + Py_TYPE(opt.ptr())->tp_name + " (its own Python update)");
    py::object ups = attr(trainer_, "_updaters");
    if (!PyList_Check(ups.ptr())) decline("_updaters is not a list");
    updaters_ = py::reinterpret_borrow<py::list>(ups);
    if (updaters_.empty()) decline("no Updater");
    for (py::handle u : updaters_) {
      if (reinterpret_cast<PyObject*>(Py_TYPE(u.ptr())) != K->updater_cls.ptr()) decline("an Updater subclass");
      if (attr(u.ptr(), "optimizer").ptr() != opt.ptr()) decline("an Updater with another optimizer");
    }
    o_.mp = truthy(attr(opt.ptr(), "multi_precision").ptr());
    if (o_.rule == Rule::kSgd || o_.rule == Rule::kNag) {
      o_.momentum = PyFloat_AsDouble(attr(opt.ptr(), "momentum").ptr());
      if (PyErr_Occurred()) throw py::error_already_set();
      if (o_.momentum < 0 || std::isnan(o_.momentum)) decline("a negative momentum");
    }
    scheduler_ = attr(opt.ptr(), "lr_scheduler");
    if (!scheduler_.is_none()) {
      bool ok = false;
      for (const auto& s : K->schedulers) ok |= reinterpret_cast<PyObject*>(Py_TYPE(scheduler_.ptr())) == s.ptr();
      if (!ok) decline("an lr scheduler not from mxnet.lr_scheduler");
    }
    lr_ = attr(opt.ptr(), "lr");
    wd_ = attr(opt.ptr(), "wd");
    param_dict_ = attr(opt.ptr(), "param_dict");
    lr_mult_ = attr(opt.ptr(), "lr_mult");
    wd_mult_ = attr(opt.ptr(), "wd_mult");
    idx2name_ = attr(opt.ptr(), "idx2name");
    for (PyObject* d : {param_dict_.ptr(), lr_mult_.ptr(), wd_mult_.ptr(), idx2name_.ptr()})
      if (!PyDict_Check(d)) decline("an optimizer dict replaced by another mapping");
    if (o_.rule == Rule::kAdaGrad) {
      py::object clip = attr(opt.ptr(), "clip_gradient");
      if (!clip.is_none() && PyFloat_AsDouble(clip.ptr()) < 0) decline("AdaGrad with a negative clip bound");
      if (PyErr_Occurred()) throw py::error_already_set();
    }
  }

  // The (parameter, context) pairs MXNet's _update would hand each Updater; declines on a stale
  // gradient (MXNet raises) and on arrays our kernels do not take.
  void collect() {
    py::object params = attr(trainer_, "_params");
    if (!PyList_Check(params.ptr())) decline("_params is not a list");
    entries_.assign(updaters_.size(), {});
    const Trace& t = ts_.trace;
    PyTypeObject* nd = reinterpret_cast<PyTypeObject*>(R->ndarray_cls.ptr());
    for (Py_ssize_t i = 0, n = PyList_GET_SIZE(params.ptr()); i < n; ++i) {
      PyObject* p = PyList_GET_ITEM(params.ptr(), i);
      // Parameter.grad_req is a Python property returning _grad_req: read that directly
      py::object req = attr(p, Py_TYPE(p) == reinterpret_cast<PyTypeObject*>(K->parameter_cls.ptr()) ? "_grad_req" : "grad_req");
      if (PyUnicode_Check(req.ptr()) && PyUnicode_CompareWithASCIIString(req.ptr(), "null") == 0) continue;
      py::object data = attr(p, "_data"), grads = attr(p, "_grad");
      if (!PyList_Check(data.ptr()) || !PyList_Check(grads.ptr())) decline("a parameter without data or gradient");
      const Py_ssize_t nd_ = PyList_GET_SIZE(data.ptr());
      std::vector<char> fresh(nd_);
      for (Py_ssize_t c = 0; c < nd_; ++c) {
        PyObject* w = PyList_GET_ITEM(data.ptr(), c);
        if (Py_TYPE(w) != nd) decline("a parameter array that is not a legacy NDArray");
        int f = 0;
        if (MXNDArrayGetGradState(handle_of(w), &f) != 0) decline("its gradient state cannot be read");
        fresh[c] = f != 0;
        if (!ignore_stale_ && !f) decline("a stale gradient (MXNet raises)");
      }
      const size_t pairs = std::min<size_t>({updaters_.size(), static_cast<size_t>(nd_),
                                             static_cast<size_t>(PyList_GET_SIZE(grads.ptr()))});
      for (size_t c = 0; c < pairs; ++c) {
        if (ignore_stale_ && !fresh[c]) continue;
        PyObject* w = PyList_GET_ITEM(data.ptr(), c);
        PyObject* g = PyList_GET_ITEM(grads.ptr(), c);
        if (Py_TYPE(g) != nd) decline("a gradient that is not a legacy NDArray");
        Entry e{nullptr, w, g, {}};
        AVal ga;
        if (!dense_aval(t, handle_of(w), &e.aval) || !dense_aval(t, handle_of(g), &ga)) decline("sparse storage");
        const bool f16 = e.aval.dtype == kFloat16 && o_.mp && (o_.rule == Rule::kSgd || o_.rule == Rule::kNag);
        if (e.aval.dtype != kFloat32 && !f16) decline(std::string("weights of dtype ") + dtype_name(e.aval.dtype));
        if (ga.dtype != e.aval.dtype || ga.size() != e.aval.size()) decline("a gradient unlike its weight");
        if (e.aval.dev_type != kCPU || ga.dev_type != kCPU || ga.dev_id != e.aval.dev_id) decline("arrays not on one CPU context");
        if (!entries_[c].empty() && (entries_[c][0].aval.dev_id != e.aval.dev_id)) decline("one Updater, several contexts");
        indices_.push_back(steal(PyLong_FromSsize_t(i)));
        e.index = indices_.back().ptr();
        keep_.push_back(data);  // the lists own the arrays
        keep_.push_back(grads);
        entries_[c].push_back(e);
      }
    }
    if (o_.rule == Rule::kSgd) {
      o_.aggregate = truthy(attr(updaters_[0].ptr(), "aggregate_updates").ptr());
      for (py::handle u : updaters_)
        if (truthy(attr(u.ptr(), "aggregate_updates").ptr()) != o_.aggregate) decline("Updaters that aggregate differently");
      if (o_.aggregate) {
        o_.chunk = PyLong_AsSsize_t(attr(o_.obj, "aggregate_num").ptr());
        if (PyErr_Occurred()) throw py::error_already_set();
        if (o_.chunk < 1) decline("aggregate_num < 1");
      }
    } else {
      for (py::handle u : updaters_)
        if (truthy(attr(u.ptr(), "aggregate_updates").ptr())) decline("an aggregating Updater for a per-weight rule");
    }
    // A weight, gradient or state given twice, or two views of one array: MXNet's ops then
    // read what an earlier op of the step wrote; one kernel call would not.
    if (chunk_identity_works()) {
      std::vector<const void*> chunks;  // sorted: a step has hundreds (a hash set cost 3x more)
      for (const auto& e : entries_)
        for (const Entry& x : e)
          for (PyObject* a : {x.weight, x.grad})
            if (const void* c = chunk_of(handle_of(a))) chunks.push_back(c);
      std::sort(chunks.begin(), chunks.end());
      if (std::adjacent_find(chunks.begin(), chunks.end()) != chunks.end()) decline("two parameters share storage");
    }
  }

  std::vector<py::object> indices_, keep_;

  void set_fresh(NDArrayHandle h, bool state) { set_grad_state_of(h, state); }

  // The learning rate MXNet's _get_lrs starts from: the scheduler's at num_update, else lr.
  py::object base_lr() {
    if (scheduler_.is_none()) return lr_;
    py::object count = attr(o_.obj, "num_update");
    // mxnet.lr_scheduler's schedulers change state only when the count moves on: called
    // again at the same count they return the same rate, so one call per count suffices.
    if (sched_count_ && truthy(steal(PyObject_RichCompare(count.ptr(), sched_count_.ptr(), Py_EQ)).ptr()))
      return sched_lr_;
    sched_lr_ = steal(PyObject_CallOneArg(scheduler_.ptr(), count.ptr()));
    sched_count_ = count;
    return sched_lr_;
  }

  // Optimizer._update_count(indices) for the current context's counts.
  void count(const std::vector<Entry>& es, const std::vector<size_t>& part, PyObject* counts) {
    py::object begin = attr(o_.obj, "begin_num_update");
    py::object num = attr(o_.obj, "num_update");
    for (size_t k : part) {
      const Entry& e = es[k];
      PyObject* c = PyDict_GetItemWithError(counts, e.index);
      if (!c && PyErr_Occurred()) throw py::error_already_set();
      py::object now = steal(PyNumber_Add(c ? c : begin.ptr(), py::int_(1).ptr()));
      if (PyDict_SetItem(counts, e.index, now.ptr()) != 0) throw py::error_already_set();
      // num_update = max(count, num_update): the first of equals
      if (truthy(steal(PyObject_RichCompare(num.ptr(), now.ptr(), Py_GT)).ptr()) == false) num = now;
    }
    if (PyObject_SetAttr(o_.obj, name("num_update"), num.ptr()) != 0) throw py::error_already_set();
  }

  void update(size_t c) {
    std::vector<Entry>& es = entries_[c];
    PyObject* updater = updaters_[c].ptr();
    // Updater.__call__: the current context's counts, then states made or synced.
    int dev_type = 0, dev_id = 0;
    if (MXNDArrayGetContext(handle_of(es[0].weight), &dev_type, &dev_id) != 0) throw mxnet_failure();
    steal(PyObject_CallMethodOneArg(o_.obj, name("_set_current_context"), py::int_(dev_id).ptr()));
    py::object states = attr(updater, "states"), synced = attr(updater, "states_synced");
    if (!PyDict_Check(states.ptr()) || !PyDict_Check(synced.ptr())) return python_updater(c, "Updater states not dicts");
    for (const Entry& e : es) {
      PyObject* s = PyDict_GetItemWithError(states.ptr(), e.index);
      if (!s && PyErr_Occurred()) throw py::error_already_set();
      if (!s) {
        py::object st = steal(PyObject_CallMethodObjArgs(o_.obj, name("create_state_multi_precision"), e.index, e.weight, nullptr));
        if (PyDict_SetItem(states.ptr(), e.index, st.ptr()) || PyDict_SetItem(synced.ptr(), e.index, Py_True))
          throw py::error_already_set();
        continue;
      }
      PyObject* ok = PyDict_GetItemWithError(synced.ptr(), e.index);
      if (!ok) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, e.index);  // as MXNet's dict lookup
        throw py::error_already_set();
      }
      if (!truthy(ok)) {
        py::object ctx = attr(e.weight, "context");
        py::object st = steal(PyObject_CallMethodObjArgs(updater, name("sync_state_context"), s, ctx.ptr(), nullptr));
        if (PyDict_SetItem(states.ptr(), e.index, st.ptr()) || PyDict_SetItem(synced.ptr(), e.index, Py_True))
          throw py::error_already_set();
      }
    }
    // The kernel's arrays per weight; a state our kernels do not take: the Updater's Python.
    const Trace& t = ts_.trace;
    std::vector<std::vector<PyObject*>> arrays(es.size());
    for (size_t k = 0; k < es.size(); ++k) {
      const Entry& e = es[k];
      const bool mp = e.aval.dtype == kFloat16;
      arrays[k] = {e.weight, e.grad};
      if (!kernel_states(t, o_, mp, PyDict_GetItem(states.ptr(), e.index), e.aval, &arrays[k]))
        return python_updater(c, "an optimizer state our kernels do not take");
    }
    // Counts, learning rates and weight decays, chunk by chunk as MXNet's optimizer steps
    // them: SGD through an aggregating Updater by dtype, aggregate_num weights a call;
    // every other rule one weight a call.
    py::object counts = attr(o_.obj, "_index_update_count");
    if (!PyDict_Check(counts.ptr())) return python_updater(c, "_index_update_count is not a dict");
    // chunks: SGD through an aggregating Updater groups by dtype (MXNet's type_map), then
    // aggregate_num weights a call; every other rule one weight a call
    std::vector<std::vector<size_t>> chunks;
    if (o_.aggregate) {
      std::vector<int> dtypes;
      for (const Entry& e : es)
        if (std::find(dtypes.begin(), dtypes.end(), e.aval.dtype) == dtypes.end()) dtypes.push_back(e.aval.dtype);
      for (int d : dtypes) {
        std::vector<size_t> group;
        for (size_t k = 0; k < es.size(); ++k)
          if (es[k].aval.dtype == d) group.push_back(k);
        for (size_t at = 0; at < group.size(); at += static_cast<size_t>(o_.chunk))
          chunks.emplace_back(group.begin() + at, group.begin() + std::min(group.size(), at + static_cast<size_t>(o_.chunk)));
      }
    } else {
      for (size_t k = 0; k < es.size(); ++k) chunks.push_back({k});
    }
    const bool per_weight_op = o_.rule != Rule::kSgd;  // lr=, wd= fields; SGD: lrs=, wds= lists
    std::vector<float> lrs(es.size()), wds(es.size());
    std::unordered_map<long long, py::object> adam_factor;  // by update count t
    for (const auto& part : chunks) {
      count(es, part, counts.ptr());
      py::object base = base_lr();
      for (size_t k : part) {
        const Entry& e = es[k];
        py::object lr = times_multiplier(base.ptr(), e.index, param_dict_.ptr(), lr_mult_.ptr(), idx2name_.ptr(), "lr_mult");
        py::object wd = times_multiplier(wd_.ptr(), e.index, param_dict_.ptr(), wd_mult_.ptr(), idx2name_.ptr(), "wd_mult");
        if (o_.rule == Rule::kAdam) lr = steal(PyNumber_InPlaceMultiply(lr.ptr(), adam(e.index, counts.ptr(), &adam_factor).ptr()));
        if (o_.rule == Rule::kAdaGrad) {  // `weight * wd` and `* -lr` are scalar ops
          py::object neg = steal(PyNumber_Negative(lr.ptr()));
          lrs[k] = -mx_value(neg.ptr(), Text::kScalar);
          wds[k] = mx_value(wd.ptr(), Text::kScalar);
        } else {
          lrs[k] = mx_value(lr.ptr(), per_weight_op ? Text::kField : Text::kItem);
          wds[k] = mx_value(wd.ptr(), per_weight_op ? Text::kField : Text::kItem);
        }
      }
    }
    // One kernel call per kind of weight (float32; float16 with a master copy).
    for (int mp = 0; mp < 2; ++mp) {
      std::vector<size_t> ks;
      for (size_t k = 0; k < es.size(); ++k)
        if ((es[k].aval.dtype == kFloat16) == (mp == 1)) ks.push_back(k);
      if (!ks.empty()) record(es, ks, arrays, lrs, wds, mp == 1);
    }
    ++R->stats.trainer_batched;
  }

  // lr *= math.sqrt(1. - beta2**t) / (1. - beta1**t), with Python's own float operations.
  py::object adam(PyObject* index, PyObject* counts, std::unordered_map<long long, py::object>* memo) {
    PyObject* t = PyDict_GetItemWithError(counts, index);
    if (!t) {
      if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, index);
      throw py::error_already_set();
    }
    int overflow = 0;
    const long long tv = PyLong_Check(t) ? PyLong_AsLongLongAndOverflow(t, &overflow) : -1;
    auto it = memo->find(tv);
    if (!overflow && tv >= 0 && it != memo->end()) return it->second;
    PyErr_Clear();
    py::object one = py::float_(1.0);
    auto coef = [&](const char* beta) {
      py::object b = attr(o_.obj, beta);
      return steal(PyNumber_Subtract(one.ptr(), steal(PyNumber_Power(b.ptr(), t, Py_None)).ptr()));
    };
    py::object coef1 = coef("beta1"), coef2 = coef("beta2");
    py::object root = steal(PyObject_CallOneArg(K->sqrt.ptr(), coef2.ptr()));
    py::object f = steal(PyNumber_TrueDivide(root.ptr(), coef1.ptr()));
    if (!overflow && tv >= 0) (*memo)[tv] = f;
    return f;
  }

  // The rest of this context's update by MXNet's Updater (its states exist now), counted.
  void python_updater(size_t c, const std::string& why) {
    ++R->stats.trainer_python[why];
    py::list idx, g, w;
    for (const Entry& e : entries_[c]) idx.append(e.index), g.append(e.grad), w.append(e.weight);
    steal(PyObject_CallFunctionObjArgs(updaters_[c].ptr(), idx.ptr(), g.ptr(), w.ptr(), nullptr));
  }

  // The update launched as it is called (update_launch.h) when nothing is recorded before it.
  bool launch(const std::vector<Entry>& es, const std::vector<size_t>& ks, const std::vector<std::vector<PyObject*>>& arrays,
              const std::vector<float>& lrs, const std::vector<float>& wds, bool mp, const char* kernel,
              const std::vector<std::pair<const char*, std::string>>& shared) {
    DirectUpdate u;
    u.kernel = kernel;
    u.attrs = shared;
    u.mp = mp;
    u.stride = static_cast<int>(arrays[ks[0]].size());
    u.dev_id = es[ks[0]].aval.dev_id;
    for (size_t k : ks) {
      if (static_cast<int>(arrays[k].size()) != u.stride) return false;
      for (PyObject* a : arrays[k]) u.arrays.push_back(handle_of(a));
      u.sizes.push_back(static_cast<int64_t>(es[k].aval.size()));
      u.lrs.push_back(lrs[k]);
      u.wds.push_back(wds[k]);
    }
    if (!launch_update_directly(ts_, u)) return false;
    ++R->stats.trainer_direct;
    return true;
  }

  void record(const std::vector<Entry>& es, const std::vector<size_t>& ks, const std::vector<std::vector<PyObject*>>& arrays,
              const std::vector<float>& lrs, const std::vector<float>& wds, bool mp) {
    const char* kernel = nullptr;
    const char* formula = nullptr;
    std::vector<std::pair<const char*, std::string>> shared;
    PyObject* opt = o_.obj;
    auto field = [&](const char* key) { return exact(attr(opt, key).ptr(), Text::kField); };
    auto optional = [&](const char* key) {  // passed only when truthy (`if self.clip_gradient:`)
      py::object v = attr(opt, key);
      return truthy(v.ptr()) ? exact(v.ptr(), Text::kField) : std::string("-1");
    };
    switch (o_.rule) {
      case Rule::kSgd:
      case Rule::kNag:
        shared = {{"rescale_grad", field("rescale_grad")}, {"clip_gradient", optional("clip_gradient")}};
        if (o_.momentum > 0) {
          shared.push_back({"momentum", field("momentum")});
          kernel = o_.rule == Rule::kSgd ? (mp ? "_minpy_multi_mp_sgd_mom_update" : "_minpy_multi_sgd_mom_update")
                                         : (mp ? "_minpy_multi_mp_nag_mom_update" : "_minpy_multi_nag_mom_update");
        } else {
          kernel = mp ? "_minpy_multi_mp_sgd_update" : "_minpy_multi_sgd_update";
          formula = o_.rule == Rule::kSgd ? "multi_sgd_update" : "sgd_update";
        }
        break;
      case Rule::kAdam:
        kernel = "_minpy_multi_adam_update";
        shared = {{"rescale_grad", field("rescale_grad")}, {"clip_gradient", optional("clip_gradient")},
                  {"beta1", field("beta1")}, {"beta2", field("beta2")}, {"epsilon", field("epsilon")}};
        break;
      case Rule::kRmsProp: {
        const bool centered = truthy(attr(opt, "centered").ptr());
        kernel = centered ? "_minpy_multi_rmspropalex_update" : "_minpy_multi_rmsprop_update";
        shared = {{"rescale_grad", field("rescale_grad")}, {"clip_gradient", optional("clip_gradient")},
                  {"gamma1", field("gamma1")}, {"epsilon", field("epsilon")}, {"clip_weights", optional("clip_weights")}};
        if (centered) shared.push_back({"gamma2", field("gamma2")});
        break;
      }
      case Rule::kAdaGrad: {
        kernel = "_minpy_multi_adagrad_update";
        py::object clip = attr(opt, "clip_gradient");
        shared = {{"rescale_grad", exact(attr(opt, "rescale_grad").ptr(), Text::kScalar)},
                  {"clip_gradient", clip.is_none() ? std::string("-1") : exact(clip.ptr(), Text::kField)},
                  {"epsilon", exact(attr(opt, "float_stable_eps").ptr(), Text::kScalar)}};
        break;
      }
    }
    if (formula) shared.push_back({"formula", formula});
    if (launch(es, ks, arrays, lrs, wds, mp, kernel, shared)) return;
    std::string lr_list = "(", wd_list = "(";
    py::list ndargs, out;
    for (size_t j = 0; j < ks.size(); ++j) {
      const size_t k = ks[j];
      for (PyObject* a : arrays[k]) ndargs.append(py::handle(a));
      out.append(py::handle(es[k].weight));
      if (j) lr_list += ", ", wd_list += ", ";
      lr_list += exact_text(lrs[k]);
      wd_list += exact_text(wds[k]);
    }
    lr_list += ks.size() == 1 ? ",)" : ")";
    wd_list += ks.size() == 1 ? ",)" : ")";
    py::list keys, vals;
    auto add = [&](const char* k, const std::string& v) { keys.append(py::str(k)), vals.append(py::str(v)); };
    add("num_weights", std::to_string(ks.size()));
    add("lrs", lr_list);
    add("wds", wd_list);
    for (const auto& kv : shared) add(kv.first, kv.second);
    OpHandle h = nullptr;
    if (NNGetOpHandle(kernel, &h) != 0 || !h) throw MXError(std::string("no operator ") + kernel);
    py::tuple args = py::make_tuple(steal(PyLong_FromVoidPtr(h)), ndargs, keys, vals, out, py::bool_(false),
                                    py::bool_(false));
    invoke(py::reinterpret_borrow<py::args>(args));
  }

};

}  // namespace

// Trainer._update(ignore_stale_grad) done here: true, or false (nothing changed) and the
// caller runs MXNet's own, counted by reason.
bool trainer_update(PyObject* trainer, bool ignore_stale) {
  ThreadState& ts = me();
  if (!K || !K->set || ts.depth == 0 || in_callback(ts)) return false;
  auto python = [&](const std::string& why) {
    ++R->stats.trainer_python[why];
    return false;
  };
  if (R->kernels.empty() || !R->cfg.fuse) return python("fusion is off");
  if (ts.site && ts.site->eager) return python("its jit() site runs eagerly");
  bool rec = false;
  MXAutogradIsRecording(&rec);
  if (rec) return python("under autograd.record()");
  // The update reads its arrays from the current trace only: other contexts' traces run first.
  if (!ts.parked.empty()) flush_thread(ts, "context switch", user_site());
  TrainerStep step(ts, trainer, ignore_stale);
  try {
    step.run();
  } catch (const Decline& d) {
    return python(d.why);
  }
  return true;
}

void register_trainer_api(py::module_& m) {
  m.def("set_trainer_classes", [](py::object updater_cls, py::object parameter_cls, py::dict optimizers,
                                   py::list schedulers, py::object sqrt) {
    if (!K) K = new Known();  // lives for the process, like R
    K->updater_cls = updater_cls;
    K->parameter_cls = parameter_cls;
    K->sqrt = sqrt;
    K->optimizers.clear();
    static const std::unordered_map<std::string, Rule> rules = {
        {"sgd", Rule::kSgd}, {"nag", Rule::kNag}, {"adam", Rule::kAdam}, {"rmsprop", Rule::kRmsProp},
        {"adagrad", Rule::kAdaGrad}};
    for (auto kv : optimizers) K->optimizers.push_back({py::reinterpret_borrow<py::object>(kv.first),
                                                        rules.at(py::str(kv.second).cast<std::string>())});
    K->schedulers.clear();
    for (py::handle s : schedulers) K->schedulers.push_back(py::reinterpret_borrow<py::object>(s));
    K->set = true;
  });
  m.def("trainer_update", [](py::object trainer, bool ignore_stale) { return trainer_update(trainer.ptr(), ignore_stale); },
        "Trainer._update(ignore_stale_grad) of a known optimizer as one recorded kernel call per context; "
        "False (nothing changed) when MXNet's own must run.");
}

}  // namespace minpy
