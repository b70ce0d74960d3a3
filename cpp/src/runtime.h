// Runtime state shared by the extension's parts: configuration, per-thread
// traces, caches, counters -- and the functions each part offers the others.
//   pyarray.cc  Python NDArray objects: handles, liveness, the lazy-array pool
//   record.cc   the interceptor: one op call -> trace nodes (+ scalar lifting)
//   update_batch.cc  per-weight optimizer updates gathered at call time, launched as one
//   flush.cc    a trace -> outputs, cache lookup or compile, execution, release
//   launch.cc   cached segments handed to MXNet from a background thread, in order
//   fragment.cc compiled fragments of @minpy_jit.function: guards, capture, replay
//   bindings.cc scopes, statistics and the Python module
#pragma once
#include <pybind11/pybind11.h>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "executor.h"
#include "infer.h"
#include "source.h"
#include "stats.h"
#include "update_batch.h"

namespace minpy {
namespace py = pybind11;

struct Config {
  size_t max_ops = 10000;    // flush when a trace reaches this many ops
  size_t segment_ops = 64;   // long traces run in segments of about this many ops (0: off), see segment_due
  size_t pool_per_aval = 4096;  // recycled lazy arrays kept per abstract value (no data: a few hundred bytes each)
  int recompile_limit = 8;   // distinct graphs per scope site and flush ordinal before the site runs eagerly
  bool track_source = true;
  bool log_recompiles = false, log_flushes = false;
  bool fuse = true;  // run elementwise chains and optimizer updates in our own kernels (fuse.h)
  bool async_launch = true;  // hand cached segments to MXNet from a background thread (launch.h)
  bool backward_in_graph = true;  // run backward() with its forward as one graph (backward.h)
  bool whole_step = true;  // ... and leave that graph open, so the optimizer update joins it
  // A read of a pending recorded trace before its backward() is known runs it without autograd
  // and keeps it open (flush.cc, read_keeps_recorded_trace): the backward, when it comes, still
  // sees the whole forward, fused, instead of ops already recorded one by one.
  bool reads_keep_recorded = true;
  bool direct_updates = true;  // launch a Trainer update with nothing recorded before it directly (update_launch.h)
  bool direct_kernels = true;  // run a graph made only of our fused kernels as one engine operation (kernel_launch.h)
  bool batch_projections = true;  // one FullyConnected call for a weight's independent row blocks (projections.h)
  bool fc_kernels = true;  // FullyConnected on both cores in our kernels, where they give MXNet's bits (exact_fc.h)
  bool stable_params = true;  // bind inputs that stay the same arrays as parameters of the graph (Executor::params)
};

struct Site;
struct ThreadState {
  uint64_t id = 0;  // unique per thread that ever recorded (states are recycled: a new id each time)
  int depth = 0;
  bool flushing = false;
  std::thread::id flusher;  // the thread running this trace's flush, while `flushing`
  int busy = 0;  // inside invoke(): the trace may be half-updated; other threads must not flush it
  int in_mxnet = 0;  // guarded MXNet C API calls this thread is inside: Python running now is a callback
  signed char foreign = -1;  // a thread MXNet started (callbacks.cc: foreign_thread); -1 not yet known
  int capturing = 0;  // a @function fragment is being captured (fragment.h): no segment cuts
  int replaying_batch = 0;  // a refused batch's calls are being recorded (update_batch.h): none joins one
  int flush_ordinal = 0;           // flushes so far in the outermost open scope (this one is numbered)
  uint64_t segment_anchor = 0;     // content of the op that ended the last segment, 0 after other flushes
  std::vector<std::string> sites;  // scope entry sites, innermost last
  struct Site* site = nullptr;     // the innermost site's record (stable: map nodes do not move)
  uint64_t site_hash = 0;
  // While MXNet's backward waits for this thread's pending work (callbacks.cc): its heads, and
  // whether it keeps the graph (retain_graph). See backward_could_do_more (parts.h).
  std::vector<NDArrayHandle> backward_heads;
  bool backward_retains = false;
  // This thread's work failed to run in another thread's flush (flush_all): the
  // error is this thread's, as its op's eagerly, raised at its next op, guarded call or scope
  // exit (raise_foreign_flush_error), not in the thread that happened to flush.
  std::exception_ptr foreign_flush_error;
  Trace trace;
  // The open traces of other contexts (record.cc: one trace per context, so that a
  // data-parallel step's per-context forwards stay pending side by side until each one's
  // backward() or a flush). Never read by an op of another context; flushed with `trace`.
  std::vector<Trace> parked;
  // Per-weight updates called while nothing else was pending, not yet launched (update_batch.h):
  // non-empty only while `trace` and `parked` are empty; pushed before anything else runs.
  UpdateBatch batch;
  bool has_pending() const { return !trace.empty() || !parked.empty() || !batch.empty(); }
};

struct Site {
  // Distinct graphs compiled per flush ordinal within the scope: a scope that always runs as
  // the same few segments compiles each once; a storm keeps adding graphs at one ordinal.
  std::unordered_map<int, int> compiles_at;
  int compiles() const {
    int total = 0;
    for (const auto& kv : compiles_at) total += kv.second;
    return total;
  }
  bool eager = false;  // recompile limit hit: the site runs eagerly from now on
};

// Recycled lazy arrays (no data: a few hundred bytes each), by abstract value. A bucket no trace
// has used for kIdleReleases trace releases is dropped: when shapes change at every step, the
// buckets of shapes never seen again would otherwise pile up (tests/stress/shapes.py measured
// 6 KB a step).
struct LazyPool {
  static constexpr uint64_t kIdleReleases = 256;
  struct Bucket {
    std::vector<PyObject*> arrays;
    uint64_t last_used = 0;
  };
  std::unordered_map<uint64_t, Bucket> buckets;
  uint64_t clock = 0;  // trace releases so far
  std::vector<PyObject*>& at(uint64_t key) {
    Bucket& b = buckets[key];
    b.last_used = clock;
    return b.arrays;
  }
  // One trace released; every kIdleReleases, takes the idle buckets' arrays out (to be released).
  void tick(std::vector<PyObject*>* drop) {
    if (++clock % kIdleReleases) return;
    for (auto it = buckets.begin(); it != buckets.end();) {
      if (clock - it->second.last_used >= kIdleReleases) {
        drop->insert(drop->end(), it->second.arrays.begin(), it->second.arrays.end());
        it = buckets.erase(it);
      } else {
        ++it;
      }
    }
  }
};

// A set of trace positions asked on every recorded op (append_node): a direct-mapped memo of
// positions found in it answers most asks without the hash set's lookup (a division by its
// prime bucket count). The memo only holds members, and clear() empties it too.
class PositionSet {
 public:
  bool count(uint64_t p) const {
    std::atomic<uint64_t>& m = memo_[(p ^ (p >> 29)) & (kMemo - 1)];
    if (p != 0 && m.load(std::memory_order_relaxed) == p) return true;
    if (!set_.count(p)) return false;
    m.store(p, std::memory_order_relaxed);
    return true;
  }
  void insert(uint64_t p) { set_.insert(p); }
  size_t size() const { return set_.size(); }
  void clear() {
    set_.clear();
    for (auto& m : memo_) m.store(0, std::memory_order_relaxed);
  }

 private:
  static constexpr size_t kMemo = 1024;
  std::unordered_set<uint64_t> set_;
  mutable std::atomic<uint64_t> memo_[kMemo] = {};
};

struct Runtime {
  py::object orig_invoke, ndarray_cls, np_ndarray_cls, void_p, error_cls, log_fn;
  py::object mxnet_error_fn;  // errors.py mxnet_error(text, note): the exception eager code gets
  std::unordered_map<AtomicSymbolCreator, std::unique_ptr<OpInfo>> ops;
  SignatureCache sigs;
  ExecutorCache cache{256};
  std::unordered_set<std::string> nondiff;
  std::unordered_map<std::string, Site> sites;
  LazyPool pool;
  SourceTable sources;
  struct ScalarSite {
    std::string first;
    bool hot = false;
  };
  std::unordered_map<uint64_t, ScalarSite> scalar_sites;  // see rewrite.h for the lifting rule
  // Trace positions (Node::position) already compiled: recording there again needs no source
  // line, since the graph printout and miss explanations only ever show new positions.
  PositionSet seen_positions;
  // Trace positions of backward nodes (Node::position) whose forward and gradient were built
  // and run as one graph: only such a backward() leaves its trace open (backward.cc), so that
  // an error MXNet's backward raises when called (an op without gradient) is raised there.
  std::unordered_set<uint64_t> backward_built;
  Stats stats;
  Config cfg;
  std::vector<ThreadState*> threads, spare_states;
  std::mutex threads_mu;
  uint64_t thread_ids = 0;  // ThreadState::id handed out so far (under threads_mu)
  std::string mxnet_dir;  // the mxnet package's directory (how callbacks.cc recognises MXNet's threads)
  std::string kernels;  // path of the kernel library MXNet loaded, "" until then (fusion needs it)
  size_t pending = 0;  // recorded, unflushed ops over all threads
  // Keys of recorded traces (Trace::peek_key) a read kept open that then ran without a known
  // backward: the forward ran twice for nothing, so a read of such a trace flushes it.
  std::unordered_set<uint64_t> reads_not_kept;
  // Recorded static graphs are compiled per thread (flush.cc: a backward reads its CachedOp's
  // last forward buffers): their keys without the thread, compiled by some thread already. A
  // thread's own copy of such a graph is no new graph for its site's recompile limit (twelve
  // threads training alike models at one jit() line sent the site eager, 8 being the limit).
  std::unordered_set<uint64_t> per_thread_graphs;
};

extern Runtime* R;
ThreadState& me();
// This thread's ThreadState::id, or 0 if it has none (it never recorded, queued or flushed
// anything): unlike me(), registers no state for a thread that only asks (MXNet's own threads,
// eager code running while the hooks are in).
uint64_t recording_thread_id();

// A function the kernel library MXNet loaded (Runtime::kernels) exports for the runtime to call
// itself (fused_elemwise.cc's programs, multi_update.cc's plans), by name; null without the
// library or the name. Looked up once per library. GIL held.
void* kernel_symbol(const char* name);

// Fast path for handle_of: read NDArrayBase's `handle` slot and the pointer inside the
// ctypes c_void_p directly (CDataObject: PyObject_HEAD, then char* b_ptr).
struct HandleLayout {
  PyTypeObject* base = nullptr;   // mxnet NDArrayBase
  PyTypeObject* void_p = nullptr; // ctypes.c_void_p
  Py_ssize_t offset = -1;         // of the `handle` slot
  Py_ssize_t writable_offset = -1;
};
extern HandleLayout HL;

// pyarray.cc
NDArrayHandle handle_of(PyObject* arr);
bool is_ndarray(PyObject* obj);  // an instance of MXNet's NDArrayBase (legacy or numpy array)
bool held_elsewhere(PyObject* arr);
uint64_t pool_key(const AVal& a, bool np);
PyObject* make_lazy(const AVal& a, bool np, NDArrayHandle* h_out);

// errors.cc: a C++ error as the pending Python error (MXNet's errors as eager code raises them)
void set_python_error(const std::exception& e);
void set_python_error_from_current();  // inside a catch: the exception being handled
void register_error_api(py::module_& m);

// flush.cc
std::string first_line(const std::string& s);
std::string user_site();
void log_line(const std::string& s);
// Runs the thread's pending work: every context's trace (ThreadState::parked, then `trace`).
void flush_thread(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager = false);
// Runs the current trace only (backward.cc: the heads' context), leaving other contexts' pending.
void flush_current(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager = false);
void flush_all(const std::string& cause, bool force_eager = false);
// A read (asnumpy, wait_to_read, waitall) while this thread's only pending work is a recorded
// trace with no backward yet, whose ops are pure: runs a copy of it without autograd, so the
// read sees its results, and keeps the trace open (Config::reads_keep_recorded). True if the
// read needs nothing more; false: flush as usual.
bool read_keeps_recorded_trace(ThreadState& ts, const std::string& cause);
// Another thread is flushing this trace: waits (without the GIL) until it has handed the
// trace's work to MXNet, so that what this thread does next comes after it. No-op otherwise.
void wait_for_foreign_flush(ThreadState& ts);
// Flushes another thread's trace (`cause` names the caller's reason); an MXNet error its run
// raises is kept for that thread (ThreadState::foreign_flush_error), not raised here.
void flush_other_thread(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager);
// Raises (once) the error another thread's flush of this thread's work kept for it, if any.
void raise_foreign_flush_error(ThreadState& ts);

// scope.cc: jit() scopes opened and closed by one C call each (an interrupt cannot split them)
void enter(const std::string& site);  // this thread's scope depth and site stack only
void exit_scope();                    // ... and the flush at the outermost exit
void open_scope(const std::string& site);  // enter, with MXNet's hooks installed first (once)
void close_scope();                        // exit_scope, and one scope fewer open
// The stand-ins for MXNet's code act (else they call MXNet's own): a scope open on some
// thread, recorded work pending, or a launch queued. GIL held.
bool hooks_active();
void register_scope_api(py::module_& m);

// record.cc
uint64_t hash_str(const std::string& s);
std::string str_of(PyObject* v);  // an attribute value as MXNet's Python wrapper writes it (str(v))
// Records a call given as the tuple of _imperative_invoke's arguments (update_batch.cc); its result.
py::object record_call_tuple(ThreadState& ts, PyObject* call);
OpInfo& op_info(AtomicSymbolCreator creator);
PyObject* invoke_fast(PyObject*, PyObject* const* argv, Py_ssize_t nargs);

// bindings.cc: NDArray._fresh_grad set (pending work flushed first unless h is a variable);
// false if MXNet's call failed
bool set_grad_state_of(NDArrayHandle h, bool state);

// trainer_update.cc: Gluon's Trainer._update as one kernel call per context (minpy_jit/trainer.py)
bool trainer_update(PyObject* trainer, bool ignore_stale);
void register_trainer_api(py::module_& m);

// op_functions.cc: stand-ins for MXNet's generated mx.nd op functions (minpy_jit/op_functions.py)
void register_op_function_api(py::module_& m);

// operator_stand_ins.cc: stand-ins for NDArray's and mx.np.ndarray's arithmetic operators
// (minpy_jit/frontend.py, minpy_jit/np_arithmetic.py)
void register_operator_stand_in_api(py::module_& m);

// server_update.cc: MXNet's SGD as a C kvstore updater (minpy_jit/server_updates.py)
void register_server_update_api(py::module_& m);

// callbacks.cc: Python that MXNet calls back (kvstore updaters, CustomOps) runs eagerly.
bool foreign_thread(ThreadState& ts);  // a thread MXNet started, running a callback
bool in_callback(ThreadState& ts);     // ... or inside a guarded C API call or its own flush
py::object run_from_callback(ThreadState& ts, const py::args& args);  // an op called there: eager, counted
// What must run before an MXNet C API call that sees these arrays: pending work (all of it;
// in a callback, only the traces holding the arrays) and queued launches.
void before_mxnet_call(ThreadState& ts, const std::string& cause, const std::vector<NDArrayHandle>& handles);
py::object make_guard(py::object fn, const std::string& cause, bool backward);  // for intercept.py

}  // namespace minpy
