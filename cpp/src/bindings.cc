// minpy_jit._core: the interceptor MXNet calls instead of its imperative
// invoke, and the flush that turns a trace into a cached, compiled executor.
//
// Python objects appear only here: each array the trace touches is held by
// one strong reference in its slot, which is how a flush tells live arrays
// (someone else holds them) from dead intermediates (only we do).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <structmember.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "executor.h"
#include "explain.h"
#include "infer.h"
#include "mxapi.h"
#include "rewrite.h"
#include "source.h"
#include "stats.h"

namespace py = pybind11;
using namespace minpy;

namespace {

struct Config {
  size_t max_ops = 10000;    // flush when a trace reaches this many ops
  size_t pool_per_aval = 4096;  // recycled lazy arrays kept per abstract value (no data: a few hundred bytes each)
  int recompile_limit = 8;   // distinct graphs per scope site before it runs eagerly
  bool track_source = true;
  bool log_recompiles = false, log_flushes = false;
};

struct Site;
struct ThreadState {
  int depth = 0;
  bool flushing = false;
  int busy = 0;  // inside invoke(): the trace may be half-updated; other threads must not flush it
  std::vector<std::string> sites;  // scope entry sites, innermost last
  struct Site* site = nullptr;     // the innermost site's record (stable: map nodes do not move)
  uint64_t site_hash = 0;
  Trace trace;
};

struct Site {
  int compiles = 0;
  bool eager = false;  // recompile limit hit: the site runs eagerly from now on
};

struct Runtime {
  py::object orig_invoke, ndarray_cls, np_ndarray_cls, void_p, error_cls, log_fn;
  std::unordered_map<AtomicSymbolCreator, std::unique_ptr<OpInfo>> ops;
  SignatureCache sigs;
  ExecutorCache cache{256};
  std::unordered_set<std::string> nondiff;
  std::unordered_map<std::string, Site> sites;
  std::unordered_map<uint64_t, std::vector<PyObject*>> pool;  // recycled lazy arrays by aval
  SourceTable sources;
  struct ScalarSite {
    std::string first;
    bool hot = false;
  };
  std::unordered_map<uint64_t, ScalarSite> scalar_sites;  // see rewrite.h for the lifting rule
  // Trace positions (prefix keys) already compiled: recording there again needs no source line,
  // since the graph printout and miss explanations only ever show new positions.
  std::unordered_set<uint64_t> seen_prefixes;
  Stats stats;
  Config cfg;
  std::vector<ThreadState*> threads, spare_states;
  std::mutex threads_mu;
  size_t pending = 0;  // recorded, unflushed ops over all threads
};

Runtime* R = nullptr;

// A thread's state is never freed: another thread may hold a pointer to it from
// flush_all's snapshot of the registry. States of finished threads are reused.
struct ThreadSlot {
  ThreadState* st = nullptr;
  ~ThreadSlot() {  // thread exit: runs without the GIL
    if (!st || !R) return;
    std::lock_guard<std::mutex> lock(R->threads_mu);
    R->threads.erase(std::remove(R->threads.begin(), R->threads.end(), st), R->threads.end());
    if (st->trace.empty()) R->spare_states.push_back(st);
  }
};
thread_local ThreadSlot tls;

ThreadState& me() {
  if (!tls.st) {
    std::lock_guard<std::mutex> lock(R->threads_mu);
    if (!R->spare_states.empty()) {
      tls.st = R->spare_states.back();
      R->spare_states.pop_back();
      *tls.st = ThreadState();
    } else {
      tls.st = new ThreadState();
    }
    R->threads.push_back(tls.st);
  }
  return *tls.st;
}

// ------------------------------------------------------------ arrays

// Fast path: read NDArrayBase's `handle` slot and the pointer inside the
// ctypes c_void_p directly (CDataObject: PyObject_HEAD, then char* b_ptr).
struct HandleLayout {
  PyTypeObject* base = nullptr;   // mxnet NDArrayBase
  PyTypeObject* void_p = nullptr; // ctypes.c_void_p
  Py_ssize_t offset = -1;         // of the `handle` slot
  Py_ssize_t writable_offset = -1;
} HL;

inline PyObject* handle_obj_fast(PyObject* arr) {
  if (HL.offset < 0 || !PyObject_TypeCheck(arr, HL.base)) return nullptr;
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(arr) + HL.offset);
}

NDArrayHandle handle_of(PyObject* arr) {
  PyObject* fast = handle_obj_fast(arr);
  if (fast && Py_TYPE(fast) == HL.void_p) {
    char* b_ptr = *reinterpret_cast<char**>(reinterpret_cast<char*>(fast) + sizeof(PyObject));
    return *reinterpret_cast<void**>(b_ptr);
  }
  PyObject* h = PyObject_GetAttrString(arr, "handle");
  if (!h) throw py::error_already_set();
  PyObject* v = PyObject_GetAttrString(h, "value");
  Py_DECREF(h);
  if (!v) throw py::error_already_set();
  void* p = v == Py_None ? nullptr : PyLong_AsVoidPtr(v);
  Py_DECREF(v);
  return p;
}

// True when someone besides the trace holds the array (or its raw handle).
bool held_elsewhere(PyObject* arr) {
  if (Py_REFCNT(arr) > 1) return true;
  if (PyObject* fast = handle_obj_fast(arr)) return Py_REFCNT(fast) > 1;  // the array's slot holds one
  PyObject* h = PyObject_GetAttrString(arr, "handle");
  if (!h) {
    PyErr_Clear();
    return true;
  }
  bool shared = Py_REFCNT(h) > 2;  // the array's slot + our temporary
  Py_DECREF(h);
  return shared;
}

uint64_t pool_key(const AVal& a, bool np) { return hash_aval(a) ^ (np ? 0x4e50ULL : 0); }

// A new lazy array (an NDArray whose data the next flush writes); new reference.
PyObject* make_lazy(const AVal& a, bool np, NDArrayHandle* h_out) {
  auto& bucket = R->pool[pool_key(a, np)];
  if (!bucket.empty()) {
    PyObject* obj = bucket.back();
    bucket.pop_back();
    *h_out = handle_of(obj);
    return obj;
  }
  NDArrayHandle h = new_lazy_array(a);
  py::object handle = R->void_p(reinterpret_cast<uintptr_t>(h));
  *h_out = h;
  auto* type = reinterpret_cast<PyTypeObject*>((np ? R->np_ndarray_cls : R->ndarray_cls).ptr());
  if (HL.offset >= 0 && HL.writable_offset >= 0) {
    // Filled in C, without running NDArray.__init__: no Python bytecode may run while a trace is
    // half-updated (another thread could take the GIL and flush it).
    PyObject* obj = type->tp_alloc(type, 0);
    if (!obj) throw py::error_already_set();
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + HL.offset) = handle.release().ptr();
    Py_INCREF(Py_True);
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + HL.writable_offset) = Py_True;
    return obj;
  }
  return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type))(handle).release().ptr();
}

// ------------------------------------------------------------ flush

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string user_site() { return R->sources.str(R->sources.capture()); }

void log_line(const std::string& s) {
  if (R->log_fn) R->log_fn(s);
}

struct FlushingGuard {
  ThreadState& ts;
  explicit FlushingGuard(ThreadState& t) : ts(t) { ts.flushing = true; }
  ~FlushingGuard() { ts.flushing = false; }
};

// Drops the trace's references; dead lazy arrays go back to the pool.
// Drops the trace's references; dead lazy arrays go back to the pool. The trace is
// emptied before any reference is released, since a release may run Python code
// (NDArray.__del__) and let other threads in.
void release_trace(Trace& t, const std::unordered_set<NDArrayHandle>* written = nullptr) {
  std::vector<PyObject*> drop;
  for (auto& kv : t.slots) {
    PyObject* obj = static_cast<PyObject*>(kv.second.owner);
    if (!obj) continue;
    const Slot& s = kv.second;
    // Only never-written arrays are recycled: a written one (an effectful op's dead output)
    // may carry autograd history, and MXNet refuses to write into such an array again.
    if (s.ours && !(written && written->count(kv.first)) && !held_elsewhere(obj)) {
      bool np = Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(R->ndarray_cls.ptr());
      auto& bucket = R->pool[pool_key(t.values[s.value].aval, np)];
      if (bucket.size() < R->cfg.pool_per_aval) {
        bucket.push_back(obj);
        continue;
      }
    }
    drop.push_back(obj);
  }
  for (auto h : t.owned) MXNDArrayFree(h);
  R->pending -= std::min(R->pending, t.nodes.size());
  t.clear();
  for (PyObject* obj : drop) Py_DECREF(obj);
}

size_t dtype_bytes(int flag) {
  switch (flag) {
    case 1: case 6: return 8;
    case 2: return 2;
    case 3: case 5: case 7: return 1;
    default: return 4;
  }
}

// True when an array the trace writes in place shares memory with another array
// it uses (a view: x.reshape, x[1:3]). One graph cannot order such a write against
// reads through the other handle; eager replay can (MXNet orders them by memory).
bool writes_alias_inputs(const Trace& t, const std::vector<OutputSpec>& outputs) {
  struct Range {
    uintptr_t lo, hi;
    NDArrayHandle h;
    bool written;
  };
  std::vector<Range> ranges;
  auto add = [&](NDArrayHandle h, const AVal& a, bool written) {
    void* p = nullptr;
    MXNDArrayGetData(h, &p);
    auto lo = reinterpret_cast<uintptr_t>(p);
    if (lo) ranges.push_back({lo, lo + static_cast<uintptr_t>(a.size()) * dtype_bytes(a.dtype), h, written});
  };
  for (const auto& o : outputs)
    if (o.target_ext >= 0 || !t.slots.count(o.handle) || !t.slots.at(o.handle).ours)
      add(o.handle, t.values[o.value].aval, true);
  if (ranges.empty()) return false;
  for (const auto& v : t.values)
    if (v.node < 0 && v.ext) add(v.ext, v.aval, false);
  // Sweep in address order, keeping the ranges still open at each start.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<const Range*> active;
  for (const Range& r : ranges) {
    active.erase(std::remove_if(active.begin(), active.end(), [&](const Range* a) { return a->hi <= r.lo; }),
                 active.end());
    for (const Range* a : active)
      if (a->h != r.h && (a->written || r.written)) return true;
    active.push_back(&r);
  }
  return false;
}

void flush_thread(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager = false);

void flush_thread(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager) {
  Trace& t = ts.trace;
  if (ts.flushing) return;
  if (t.nodes.empty()) {
    release_trace(t);
    return;
  }
  FlushingGuard guard(ts);
  FlushEvent ev;
  ev.cause = cause;
  ev.where = where;
  ev.nodes = static_cast<int>(t.nodes.size());

  // Graph outputs: live lazy arrays, and arrays written in place.
  std::vector<OutputSpec> outputs;
  std::vector<char> is_output(t.values.size(), 0);
  std::vector<NDArrayHandle> dead_handle_of_value(t.values.size(), nullptr);
  for (auto& kv : t.slots) {
    const Slot& s = kv.second;
    if (s.ours) {
      if (held_elsewhere(static_cast<PyObject*>(s.owner))) {
        outputs.push_back({s.value, -1, kv.first});
        is_output[s.value] = 1;
      } else {
        dead_handle_of_value[s.value] = kv.first;
      }
    } else if (s.value != s.ext_value) {
      outputs.push_back({s.value, s.ext_value, kv.first});
      is_output[s.value] = 1;
    }
  }
  // Effectful ops (random draws, in-place state updates) run even when their results are dead.
  std::vector<NDArrayHandle> temps;
  for (const Node& n : t.nodes) {
    if (!n.op->effectful && n.mutated.empty()) continue;
    bool any = false;
    for (int v : n.out) any |= is_output[v] != 0;
    if (any) continue;
    int v = n.out.empty() ? -1 : n.out[0];
    if (v < 0) continue;
    NDArrayHandle h = dead_handle_of_value[v];
    if (!h) {
      h = new_lazy_array(t.values[v].aval);
      temps.push_back(h);
    }
    outputs.push_back({v, -1, h});
    is_output[v] = 1;
  }
  std::sort(outputs.begin(), outputs.end(), [](const OutputSpec& a, const OutputSpec& b) { return a.value < b.value; });
  Key128 key = t.key;
  for (const auto& o : outputs) {
    key.add(0x0A7ULL + static_cast<uint64_t>(o.value));
    key.add(static_cast<uint64_t>(o.target_ext + 2));
  }
  char keybuf[20];
  snprintf(keybuf, sizeof keybuf, "%016llx", static_cast<unsigned long long>(key.a));
  ev.key = keybuf;

  std::string site = ts.sites.empty() ? "" : ts.sites.back();
  std::unordered_set<NDArrayHandle> written;
  for (const auto& o : outputs) written.insert(o.handle);
  struct Cleanup {
    ThreadState& ts;
    std::vector<NDArrayHandle>& temps;
    std::unordered_set<NDArrayHandle>& written;
    ~Cleanup() {
      for (auto h : temps) MXNDArrayFree(h);
      release_trace(ts.trace, &written);
    }
  } cleanup{ts, temps, written};

  bool site_eager = !site.empty() && R->sites[site].eager;
  if (force_eager) {
    site_eager = true;
    ev.miss_reason = "ran eagerly: " + cause;
  } else if (!site_eager && writes_alias_inputs(t, outputs)) {
    site_eager = true;
    ev.miss_reason = "an in-place write targets memory shared with another array (a view): ran eagerly";
  }
  std::shared_ptr<Executor> exe = site_eager ? nullptr : R->cache.find(key);
  if (exe && exe->op) {
    ++R->stats.cache_hits;
    ev.hit = true;
    ev.graph_nodes = exe->num_nodes;
  } else if (exe) {
    ev.miss_reason = "known to run eagerly: " + exe->ir;
  } else if (!site_eager) {
    ++R->stats.cache_misses;
    ev.miss_reason = nearest_difference(t, outputs, R->cache.entries(),
                                        [](int loc) { return R->sources.str(loc); });
    LoweredGraph g;
    try {
      exe = compile(t, outputs, &R->nondiff, &g);
    } catch (const MXError& e) {
      // Cached as an eager-only entry, so the same sequence is not compiled again.
      ev.miss_reason += std::string(" | compile failed, runs eagerly: ") + first_line(e.what());
      exe = std::make_shared<Executor>();
      exe->ir = "(runs eagerly: " + first_line(e.what()) + ")";
    }
    if (exe) {
      exe->key = key;
      exe->site = site;
      exe->steps = steps_of(t);
      for (const auto& o : outputs) exe->outputs.emplace_back(o.value, o.target_ext);
      exe->recording = t.recording;
      exe->training = t.training;
      if (R->seen_prefixes.size() > (1u << 20)) R->seen_prefixes.clear();
      for (const Node& n : t.nodes) R->seen_prefixes.insert(n.prefix);
      char title[160];
      snprintf(title, sizeof title, "graph %s  (%d nodes, %zu inputs, %zu outputs)  compiled at %s", ev.key.c_str(),
               exe->num_nodes, g.input_values.size(), outputs.size(), where.c_str());
      if (exe->op) exe->ir = print_graph(t, g, outputs, [](int loc) { return R->sources.str(loc); }, title);
      R->stats.cache_evictions += R->cache.insert(key, exe);
      R->stats.compile_ms += exe->compile_ms;
      ev.compile_ms = exe->compile_ms;
      ev.graph_nodes = exe->num_nodes;
      if (!site.empty()) {
        Site& st = R->sites[site];
        if (++st.compiles > R->cfg.recompile_limit && !st.eager) {
          st.eager = true;
          log_line("minpy_jit: WARNING: the jit() scope at " + site + " compiled " + std::to_string(st.compiles) +
                   " different graphs (limit " + std::to_string(R->cfg.recompile_limit) +
                   "); it runs eagerly from now on. Last reason: " + ev.miss_reason);
        }
      }
    }
    if (R->cfg.log_recompiles)
      log_line("minpy_jit: compile " + ev.key + " nodes=" + std::to_string(ev.graph_nodes) + " ms=" +
               std::to_string(ev.compile_ms) + " at " + where + " (" + cause + "): " + ev.miss_reason);
  }
  ++R->stats.flushes[cause];
  if (exe && exe->op) {
    try {
      run(*exe, t, outputs);
      ++R->stats.executions;
    } catch (const MXError& e) {
      ev.eager = true;
      ++R->stats.eager_replays;
      run_eagerly(t, outputs);  // gives MXNet's own error for the failing op, if any
    }
  } else {
    ev.eager = true;
    ++R->stats.eager_replays;
    run_eagerly(t, outputs);
  }
  if (R->cfg.log_flushes)
    log_line("minpy_jit: flush " + cause + " at " + where + ": " + std::to_string(ev.nodes) + " ops, " +
             (ev.eager ? "eager" : ev.hit ? "cache hit " + ev.key : "compiled " + ev.key));
  R->stats.add_event(std::move(ev));
}

void flush_all(const std::string& cause, bool force_eager = false) {
  if (R->pending == 0) return;
  std::string where = user_site();
  ThreadState& mine = me();
  flush_thread(mine, cause, where, force_eager);
  if (R->pending == 0) return;
  std::vector<ThreadState*> others;
  {
    std::lock_guard<std::mutex> lock(R->threads_mu);
    others = R->threads;
  }
  for (ThreadState* ts : others)
    if (ts != &mine && !ts->trace.empty() && !ts->busy)
      flush_thread(*ts, cause + " (from another thread)", where, force_eager);
}

// ------------------------------------------------------------ recording

OpInfo& op_info(AtomicSymbolCreator creator) {
  auto it = R->ops.find(creator);
  if (it != R->ops.end()) return *it->second;
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
  info->effectful = n == "Custom" || n.find("random") != std::string::npos || n.find("sample") != std::string::npos ||
                 n == "Dropout" || n == "_shuffle" || n == "RNN";
  return *(R->ops[creator] = std::move(info));
}

// The arrays a call returns: out= arrays rebound to the new values, or new lazy arrays.
py::object bind_results(ThreadState& ts, const std::vector<int>& outs, const std::vector<PyObject*>& out_objs,
                        PyObject* out, bool is_np, bool as_list) {
  Trace& t = ts.trace;
  py::object result;
  if (!out_objs.empty()) {
    for (size_t i = 0; i < out_objs.size(); ++i) {
      NDArrayHandle h = handle_of(out_objs[i]);
      const Value& val = t.values[outs[i]];
      if (val.node >= 0) {  // remembered for eager replay, which must write where eager MXNet writes
        Node& producer = t.nodes[val.node];
        producer.targets.resize(producer.out.size(), nullptr);
        producer.targets[val.index] = h;
      }
      auto it = t.slots.find(h);
      if (it == t.slots.end()) {
        Slot& s = t.bind(h, outs[i], false, out_objs[i]);
        s.ext_value = -1;
        Py_INCREF(out_objs[i]);
      } else {
        it->second.value = outs[i];
      }
    }
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
  if (t.nodes.size() >= R->cfg.max_ops) flush_thread(ts, "op count cap", user_site());
  return result;
}

uint64_t hash_str(const std::string& s) { return hash_bytes(s.data(), s.size()); }

// Records the nodes of a lifted-scalar expansion into the current trace.
struct TraceEmitter : Emitter {
  ThreadState& ts;
  int loc;
  explicit TraceEmitter(ThreadState& t, int l) : ts(t), loc(l) {}

  int node(const std::string& name, std::vector<Attr> attrs, std::vector<int> in) override {
    AtomicSymbolCreator creator = nullptr;
    MX_CALL(NNGetOpHandle(name.c_str(), &creator));
    OpInfo& op = op_info(creator);
    uint64_t h = 0x41;
    for (const auto& a : attrs) h = mix64(mix64(h ^ hash_str(a.key)) ^ hash_str(a.val));
    Trace& t = ts.trace;
    std::vector<const AVal*> avals;
    for (int v : in) avals.push_back(&t.values[v].aval);
    const OpSignature& sig = R->sigs.lookup(op, attrs, h, avals, t.np_shape);
    if (!sig.recordable) throw MXError("lifted form " + name + " is not recordable: " + sig.why_not);
    ++R->pending;
    ++R->stats.ops_recorded;
    return t.add_node(&op, std::move(attrs), h, in, sig.outs, sig.mutable_inputs, loc);
  }

  int constant(double v, int like) override {
    Trace& t = ts.trace;
    AVal a = t.values[like].aval;
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
    if (a.ndim == 0 && !t.np_shape) a.ndim = 1, a.dims[0] = 1;
    uint64_t k = mix64(hash_aval(a) ^ hash_bytes(&bits, nbytes));
    auto it = t.constants.find(k);
    if (it != t.constants.end()) return it->second;
    NDArrayHandle h = new_lazy_array(a);
    t.owned.push_back(h);
    MX_CALL(MXNDArraySyncCopyFromCPU(h, &bits, 1));
    int id = t.value_of(h, &a, nullptr);
    t.constants[k] = id;
    return id;
  }
};

// Whether this call's liftable attribute has been seen with another value at the same place.
bool is_hot(ThreadState& ts, const OpInfo& op, const char* attr, const std::vector<Attr>& attrs) {
  const std::string* val = nullptr;
  for (const auto& a : attrs)
    if (a.key == attr) val = &a.val;
  if (!val) return false;
  uint64_t site = mix64(ts.site_hash ^ op.hash);
  site = mix64(site ^ static_cast<uint64_t>(ts.trace.user_ops) ^ (static_cast<uint64_t>(ts.trace.recording) << 40));
  auto& s = R->scalar_sites[site];
  if (s.hot) return true;
  if (s.first.empty()) s.first = *val;
  else if (s.first != *val) s.hot = true;
  return s.hot;
}

py::object eager(const py::args& args, const std::string& cause) {
  flush_all(cause);
  return R->orig_invoke(*args);
}

std::string str_of(PyObject* v) {
  if (PyUnicode_Check(v)) {
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(v, &n);
    return std::string(s, n);
  }
  PyObject* s = PyObject_Str(v);
  if (!s) throw py::error_already_set();
  Py_ssize_t n;
  const char* c = PyUnicode_AsUTF8AndSize(s, &n);
  std::string out(c, n);
  Py_DECREF(s);
  return out;
}

// _imperative_invoke(handle, ndargs, keys, vals, out, is_np_op, output_is_list)
py::object record_call(ThreadState& ts, const py::args& args);

py::object invoke(py::args args) {
  ThreadState& ts = me();
  if (ts.depth == 0 || ts.flushing || args.size() != 7) return R->orig_invoke(*args);
  struct Busy {
    int& b;
    ~Busy() { --b; }
  } busy{++ts.busy};
  return record_call(ts, args);
}

py::object record_call(ThreadState& ts, const py::args& args) {
  if (ts.site && ts.site->eager) return R->orig_invoke(*args);
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
  Trace& t = ts.trace;
  if (!t.empty() && (t.recording != rec || t.training != train || t.np_shape != np_shape))
    flush_thread(ts, "autograd state changed", user_site());
  if (t.empty()) t.start(rec, train, np_shape);

  std::vector<Attr> attrs;
  uint64_t attr_hash = 0x41;
  Py_ssize_t nk = PyList_Check(keys) ? PyList_GET_SIZE(keys) : PySequence_Size(keys);
  attrs.reserve(nk);
  for (Py_ssize_t i = 0; i < nk; ++i) {
    py::object k = py::reinterpret_steal<py::object>(PySequence_GetItem(keys, i));
    py::object v = py::reinterpret_steal<py::object>(PySequence_GetItem(vals, i));
    Attr a{str_of(k.ptr()), str_of(v.ptr())};
    attr_hash = mix64(attr_hash ^ hash_bytes(a.key.data(), a.key.size()));
    attr_hash = mix64(attr_hash ^ hash_bytes(a.val.data(), a.val.size()));
    attrs.push_back(std::move(a));
  }

  // Variadic ops (concat, stack, add_n): eager MXNet fills in the input count; so must we.
  Py_ssize_t n_nd = PySequence_Size(ndargs);
  if (!op.var_num_args.empty() &&
      std::none_of(attrs.begin(), attrs.end(), [&](const Attr& a) { return a.key == op.var_num_args; })) {
    Attr a{op.var_num_args, std::to_string(n_nd)};
    attr_hash = mix64(attr_hash ^ hash_bytes(a.key.data(), a.key.size()));
    attr_hash = mix64(attr_hash ^ hash_bytes(a.val.data(), a.val.size()));
    attrs.push_back(std::move(a));
  }

  // Ops whose symbolic form MXNet 1.9.1 cannot build (composing reset_arrays segfaults inside
  // nnvm; the multi-tensor optimizer ops other than multi_sgd_* lack symbolic inference).
  if (op.name == "reset_arrays" || (op.name.rfind("multi_", 0) == 0 && !needs_expansion(op.name)) ||
      op.name.rfind("_multi_", 0) == 0 || op.name.rfind("preloaded_multi_", 0) == 0) {
    ++R->stats.fallbacks[op.name];
    ++R->stats.fallback_reasons[op.name + ": no symbolic form in MXNet 1.9.1"];
    return eager(args, "eager op " + op.name);
  }

  // Lazy arrays are dense: ops that produce sparse storage run eagerly.
  if (op.name.find("sparse") != std::string::npos ||
      (op.name == "cast_storage" && std::any_of(attrs.begin(), attrs.end(), [](const Attr& a) {
         return a.key == "stype" && a.val != "default";
       }))) {
    ++R->stats.fallbacks[op.name];
    ++R->stats.fallback_reasons[op.name + ": sparse output"];
    return eager(args, "eager op " + op.name);
  }

  // Inputs: the value each array holds now; new arrays become external inputs.
  Py_ssize_t nin = PySequence_Size(ndargs);
  std::vector<int> in(nin);
  std::vector<PyObject*> in_objs(nin);
  for (Py_ssize_t i = 0; i < nin; ++i) {
    PyObject* arr = PyList_Check(ndargs) ? PyList_GET_ITEM(ndargs, i) : nullptr;
    py::object hold;
    if (!arr) {
      hold = py::reinterpret_steal<py::object>(PySequence_GetItem(ndargs, i));
      arr = hold.ptr();
    }
    in_objs[i] = arr;
    NDArrayHandle h = handle_of(arr);
    auto it = t.slots.find(h);
    if (it != t.slots.end()) {
      in[i] = it->second.value;
      continue;
    }
    if (stype_of(h) != 0) {
      ++R->stats.fallbacks[op.name];
      ++R->stats.fallback_reasons[op.name + ": sparse input"];
      return eager(args, "eager op " + op.name);
    }
    Slot* slot = nullptr;
    in[i] = t.value_of(h, nullptr, &slot);
    Py_INCREF(arr);
    slot->owner = arr;
  }
  std::vector<const AVal*> in_avals(nin);
  for (Py_ssize_t i = 0; i < nin; ++i) in_avals[i] = &t.values[in[i]].aval;

  // CopyFromTo (`copyto`, `x[:] = y`) has no graph form; within one context it is _copy or Cast.
  if (op.name == "_copyto" && nin == 1 && out != Py_None && PyObject_HasAttrString(out, "handle")) {
    NDArrayHandle h = handle_of(out);
    auto it = t.slots.find(h);
    AVal target = it != t.slots.end() ? t.values[it->second.value].aval : aval_of(h);
    const AVal& src = t.values[in[0]].aval;
    bool same_place = target.dev_type == src.dev_type && target.dev_id == src.dev_id &&
                      (it != t.slots.end() || stype_of(h) == 0);
    if (same_place && target.ndim == src.ndim && std::equal(src.dims, src.dims + src.ndim, target.dims)) {
      TraceEmitter em(ts, R->cfg.track_source ? R->sources.capture() : -1);
      int v = target.dtype == src.dtype ? em.node("_copy", {}, {in[0]})
                                        : em.node("Cast", {{"dtype", dtype_name(target.dtype)}}, {in[0]});
      ++t.user_ops;
      return bind_results(ts, {v}, {out}, out, is_np, as_list);
    }
  }

  const char* lift = op.lift;
  bool hot = *lift && is_hot(ts, op, lift, attrs);
  if (hot || needs_expansion(op.name)) {
    if (!hot && op.name == "multi_sgd_mom_update")  // its momenta are updated in place: materialise them
      for (int v : in)
        if (t.values[v].node >= 0) {
          flush_thread(ts, "in-place update of a pending array by " + op.name, user_site());
          return record_call(ts, args);
        }
    TraceEmitter em(ts, R->cfg.track_source ? R->sources.capture() : -1);
    std::vector<int> outs;
    std::vector<std::pair<int, int>> updates;
    bool done = hot ? expand_lifted(op.name, attrs, in, em, &outs, &updates)
                    : expand_native(op.name, attrs, in, em, &outs, &updates);
    if (done) {
      for (const auto& u : updates) t.slots[handle_of(in_objs[u.first])].value = u.second;
      ++t.user_ops;
      std::vector<PyObject*> out_objs;
      if (out != Py_None) {
        if (PyObject_HasAttrString(out, "handle")) out_objs.push_back(out);
        else for (Py_ssize_t i = 0; i < PySequence_Size(out); ++i) {
          PyObject* o = PySequence_GetItem(out, i);
          out_objs.push_back(o);
          Py_DECREF(o);
        }
      }
      return bind_results(ts, outs, out_objs, out, is_np, as_list);
    }
  }

  const OpSignature* sig;
  try {
    sig = &R->sigs.lookup(op, attrs, attr_hash, in_avals, np_shape);
  } catch (const OpInputError& e) {
    PyErr_SetString(R->error_cls.ptr(), e.what());
    throw py::error_already_set();
  }
  if (!sig->recordable) {
    ++R->stats.fallbacks[op.name];
    ++R->stats.fallback_reasons[op.name + ": " + sig->why_not];
    return eager(args, "eager op " + op.name);
  }

  // out=: the written arrays must match what the op produces.
  std::vector<PyObject*> out_objs;
  if (out != Py_None) {
    if (PySequence_Check(out) && !PyObject_HasAttrString(out, "handle")) {
      Py_ssize_t n = PySequence_Size(out);
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* o = PySequence_GetItem(out, i);
        out_objs.push_back(o);
        Py_DECREF(o);  // still referenced by `out`
      }
    } else {
      out_objs.push_back(out);
    }
    if (out_objs.size() != sig->outs.size()) {
      PyErr_SetString(R->error_cls.ptr(), ("operator '" + op.name + "' produces " + std::to_string(sig->outs.size()) +
                                           " outputs but out= gave " + std::to_string(out_objs.size()))
                                              .c_str());
      throw py::error_already_set();
    }
    for (size_t i = 0; i < out_objs.size(); ++i) {
      NDArrayHandle h = handle_of(out_objs[i]);
      auto it = t.slots.find(h);
      AVal have = it != t.slots.end() ? t.values[it->second.value].aval : aval_of(h);
      const AVal& want = sig->outs[i];
      if (have.dev_type != want.dev_type || have.dev_id != want.dev_id || (it == t.slots.end() && stype_of(h) != 0)) {
        ++R->stats.fallbacks[op.name];
        ++R->stats.fallback_reasons[op.name + ": out= on another context or storage"];
        return eager(args, "eager op " + op.name);
      }
      if (have.ndim != want.ndim || have.size() != want.size() || have.dtype != want.dtype ||
          !std::equal(have.dims, have.dims + have.ndim, want.dims)) {
        PyErr_SetString(R->error_cls.ptr(),
                        ("operator '" + op.name + "': out= array " + std::to_string(i) + " has shape " +
                         have.shape_str() + " " + dtype_name(have.dtype) + " but the result is " + want.shape_str() +
                         " " + dtype_name(want.dtype))
                            .c_str());
        throw py::error_already_set();
      }
    }
  }

  // An op that updates an input in place needs that input materialised first.
  for (int mi : sig->mutable_inputs) {
    if (mi < nin && t.values[in[mi]].node >= 0) {
      flush_thread(ts, "in-place update of a pending array by " + op.name, user_site());
      return record_call(ts, args);
    }
  }

  int loc = R->cfg.track_source && !R->seen_prefixes.count(t.key.a) ? R->sources.capture() : -1;
  int first = t.add_node(&op, std::move(attrs), attr_hash, in, sig->outs, sig->mutable_inputs, loc);
  ++R->stats.ops_recorded;
  ++R->pending;
  ++t.user_ops;
  std::vector<int> outs;
  for (size_t i = 0; i < sig->outs.size(); ++i) outs.push_back(first + static_cast<int>(i));
  return bind_results(ts, outs, out_objs, out, is_np, as_list);
}

// ------------------------------------------------------------ scope

void set_site(ThreadState& ts) {
  ts.site = ts.sites.empty() ? nullptr : &R->sites[ts.sites.back()];
  ts.site_hash = ts.sites.empty() ? 0 : hash_str(ts.sites.back());
}

void enter(const std::string& site) {
  ThreadState& ts = me();
  ++ts.depth;
  ts.sites.push_back(site);
  set_site(ts);
}

void exit_scope() {
  ThreadState& ts = me();
  if (ts.depth == 0) return;
  struct Pop {
    ThreadState& ts;
    ~Pop() {
      --ts.depth;
      ts.sites.pop_back();
      set_site(ts);
    }
  } pop{ts};
  if (ts.depth == 1) flush_thread(ts, "scope exit", user_site());
}

py::dict stats_dict() {
  Stats& s = R->stats;
  py::dict d;
  d["ops_recorded"] = s.ops_recorded;
  d["flushes"] = py::cast(s.flushes);
  d["cache_hits"] = s.cache_hits;
  d["cache_misses"] = s.cache_misses;
  d["cache_evictions"] = s.cache_evictions;
  d["graphs_cached"] = R->cache.size();
  d["compile_ms"] = s.compile_ms;
  d["executions"] = s.executions;
  d["eager_replays"] = s.eager_replays;
  d["fallbacks"] = py::cast(s.fallbacks);
  d["fallback_reasons"] = py::cast(s.fallback_reasons);
  d["shape_inferences"] = R->sigs.inferences;
  py::dict sites;
  for (auto& kv : R->sites)
    if (kv.second.compiles) sites[py::str(kv.first)] = py::dict(py::arg("compiles") = kv.second.compiles,
                                                                py::arg("eager") = kv.second.eager);
  d["sites"] = sites;
  return d;
}

py::list events() {
  py::list out;
  for (const auto& e : R->stats.events) {
    py::dict d;
    d["cause"] = e.cause;
    d["where"] = e.where;
    d["ops"] = e.nodes;
    d["graph_nodes"] = e.graph_nodes;
    d["hit"] = e.hit;
    d["eager"] = e.eager;
    d["compile_ms"] = e.compile_ms;
    d["key"] = e.key;
    d["miss_reason"] = e.miss_reason;
    out.append(d);
  }
  return out;
}

py::list graphs() {
  py::list out;
  for (const auto& e : R->cache.entries()) {
    py::dict d;
    char k[20];
    snprintf(k, sizeof k, "%016llx", static_cast<unsigned long long>(e->key.a));
    d["key"] = std::string(k);
    d["ir"] = e->ir;
    d["json"] = e->json;
    d["nodes"] = e->num_nodes;
    d["runs"] = e->runs;
    d["compile_ms"] = e->compile_ms;
    d["site"] = e->site;
    py::list steps;
    for (const auto& st : e->steps) {
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
      steps.append(sd);
    }
    d["steps"] = steps;
    d["outputs"] = e->outputs;
    d["eager_only"] = e->op == nullptr;
    out.append(d);
  }
  return out;
}

}  // namespace

// The interceptor as a METH_FASTCALL builtin: MXNet calls it once per op, so it skips
// pybind11's overload dispatch.
PyObject* invoke_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs) {
  try {
    py::tuple args(nargs);
    for (Py_ssize_t i = 0; i < nargs; ++i) {
      Py_INCREF(argv[i]);
      PyTuple_SET_ITEM(args.ptr(), i, argv[i]);
    }
    return invoke(py::reinterpret_borrow<py::args>(args)).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(R->error_cls ? R->error_cls.ptr() : PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyMethodDef invoke_def = {"invoke", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(invoke_fast)),
                          METH_FASTCALL, "Replacement for mxnet's _imperative_invoke: records the op inside jit()."};

PYBIND11_MODULE(_core, m) {
  m.doc() = "minpy_jit core: op recording, graph lowering, executor cache";
  R = new Runtime();  // lives for the process: MXNet handles must not be freed at interpreter teardown
  m.def("install", [](py::object orig, py::object cls, py::object np_cls, py::object void_p, py::object err,
                      std::vector<std::string> lib_dirs) {
    R->orig_invoke = orig;
    R->ndarray_cls = cls;
    R->np_ndarray_cls = np_cls;
    R->void_p = void_p;
    R->error_cls = err;
    R->sources.set_library_dirs(lib_dirs);
    py::object base = cls.attr("__mro__")[py::int_(-2)];  // NDArrayBase (before object)
    py::object desc = base.attr("__dict__")["handle"];
    if (Py_TYPE(desc.ptr()) == &PyMemberDescr_Type) {
      HL.base = reinterpret_cast<PyTypeObject*>(base.ptr());
      HL.void_p = reinterpret_cast<PyTypeObject*>(void_p.ptr());
      HL.offset = reinterpret_cast<PyMemberDescrObject*>(desc.ptr())->d_member->offset;
      py::object wdesc = base.attr("__dict__")["writable"];
      if (Py_TYPE(wdesc.ptr()) == &PyMemberDescr_Type)
        HL.writable_offset = reinterpret_cast<PyMemberDescrObject*>(wdesc.ptr())->d_member->offset;
    }
  });
  m.def("set_log", [](py::object fn) { R->log_fn = fn; });
  m.add_object("invoke", py::reinterpret_steal<py::object>(PyCFunction_New(&invoke_def, nullptr)));
  m.def("enter", &enter);
  m.def("exit", &exit_scope);
  m.def("depth", []() { return me().depth; });
  m.def("pending", []() { return R->pending; });
  m.def("flush", [](const std::string& cause, bool eager) { flush_all(cause, eager); }, py::arg("cause"),
        py::arg("eager") = false, "Run pending work; eager=True replays it op by op (tape nodes per op).");
  m.def("stats", &stats_dict);
  m.def("events", &events);
  m.def("graphs", &graphs);
  m.def("reset_stats", []() { R->stats = Stats(); });
  m.def("clear_cache", []() {
    R->cache.clear();
    for (auto& kv : R->sites) kv.second = Site();  // entries stay: threads point at them
    R->seen_prefixes.clear();
  });
  m.def("configure", [](py::dict kw) {
    for (auto item : kw) {
      std::string k = py::str(item.first);
      py::handle v = item.second;
      if (k == "max_ops") R->cfg.max_ops = std::max<size_t>(1, v.cast<size_t>());
      else if (k == "cache_size") R->cache.set_capacity(v.cast<size_t>());
      else if (k == "recompile_limit") R->cfg.recompile_limit = v.cast<int>();
      else if (k == "track_source") R->cfg.track_source = v.cast<bool>();
      else if (k == "log_recompiles") R->cfg.log_recompiles = v.cast<bool>();
      else if (k == "log_flushes") R->cfg.log_flushes = v.cast<bool>();
      else if (k == "pool_per_aval") R->cfg.pool_per_aval = v.cast<size_t>();
      else throw py::key_error("unknown minpy_jit option: " + k);
    }
  });
  m.def("config", []() {
    py::dict d;
    d["max_ops"] = R->cfg.max_ops;
    d["cache_size"] = R->cache.capacity();
    d["recompile_limit"] = R->cfg.recompile_limit;
    d["track_source"] = R->cfg.track_source;
    d["log_recompiles"] = R->cfg.log_recompiles;
    d["log_flushes"] = R->cfg.log_flushes;
    d["pool_per_aval"] = R->cfg.pool_per_aval;
    return d;
  });
}
