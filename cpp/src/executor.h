// Compiled executors and their cache.
//
// An executor is one MXNet CachedOp (static_alloc, static_shape) built from a
// lowered graph. It remembers which trace values feed its inputs, so a later
// trace with the same key runs it with no lowering at all. The cache is an LRU
// bounded by entry count.
#pragma once
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "explain.h"
#include "graph.h"
#include "kernel_launch.h"

namespace minpy {

struct Executor {
  // Replaced (under run_mu) when the executor binds stable inputs: see StableParams.
  mutable CachedOpHandle op = nullptr;
  std::vector<int> input_values;  // value id feeding each CachedOp input, in CachedOp order
  int num_outputs = 0;
  int num_nodes = 0;
  int fused_kernels = 0, fused_ops = 0;  // calls of our kernels per run, and the recorded ops they replace
  int batched_projections = 0;  // FullyConnected calls run as row blocks of one call (projections.h)
  int fc_kernels = 0;  // FullyConnected calls run by our kernels on both cores (exact_fc.h)
  double compile_ms = 0;
  uint64_t runs = 0;
  Key128 key;
  std::string json;
  std::string ir;  // printable graph
  std::string site; // where the scope that first compiled it was entered
  std::vector<Step> steps;  // the recorded sequence, for explaining later misses
  std::vector<std::pair<int, int>> outputs;  // (value, target_ext)
  std::vector<char> output_in_place;  // per output: written by its update kernel, not passed to MXNet
  std::vector<NDArrayHandle> placeholders;  // the (1,) outputs of in-place update kernels (ours)
  // The arrays our library ops write in place: CachedOp input positions, and output indices
  // (of `outputs`) written into existing arrays; and the inputs the graph also writes (any
  // op). Made default-layout before each run: see invoke_cached_op and compile.
  std::vector<int> layout_inputs, layout_outputs;
  // Per CachedOp input: an op of the graph writes it in place (an optimizer state such as
  // rmsprop_update's n, a weight updated in place). Never a parameter (Executor::params).
  std::vector<char> input_written;
  bool recording = false, training = false;
  // Built to record each of its ops as its own autograd node when it runs under record() (a
  // dynamic CachedOp that inlines its graph), as eager MXNet records them: see compile().
  bool per_op_autograd = false;
  // One run at a time (invoke_cached_op). MXNet's static CachedOp pushes its graph under a lock
  // of its own but flushes the engine ops it bulked after releasing it, and MXNet's engine
  // appends an op to its variables one at a time: two threads running one CachedOp at once
  // could order their ops differently on two of its buffers and wait for each other for ever
  // (seen: tests/stress/threads.py hung, threads with the same model sharing executors), or
  // one run's last ops could read buffers the other's first ops had written.
  mutable std::mutex run_mu;
  // Inputs that are the same arrays run after run (a model's weights, a fixed batch, the
  // inputs of a loop's segments) are declared parameters of a second CachedOp of the graph
  // (`param_indices`, as a hybridized Gluon block declares its weights): MXNet then binds the
  // operators reading only such inputs and internal values once and runs them in engine bulks,
  // instead of pushing each as a new engine operation every run. MXNet checks each parameter
  // against the array it was bound to at every run (NDArray::IsSame) and binds again when it
  // changed, so a wrong guess costs time, never a value. Decided at the executor's second run
  // by comparing the arrays with the first run's; given up after kParamMisses runs in which a
  // parameter changed (threads or models taking turns on one graph). Not for runs under
  // record() or per-op autograd, nor for inputs the graph writes (outputs, in-place updates).
  // The executor's own CachedOp is then swapped for a fresh one that has not run (no buffers):
  // one set of intermediate buffers per executor. Guarded by run_mu (see invoke_cached_op).
  struct StableParams {
    std::shared_ptr<void> op;  // the CachedOp with param_indices, null before or without one
    std::vector<NDArrayHandle> last;  // the previous run's inputs...
    std::vector<std::shared_ptr<const void>> chunks;  // ...and their storage, kept alive so that an
                                                      // equal pointer is the same storage
    std::vector<char> stable;  // per input: declared a parameter
    int runs = 0, misses = 0;
    bool decided = false;
  };
  mutable StableParams params;
  // A graph made only of our fused kernels: runs as one engine operation calling them
  // (kernel_launch.h) instead of through the CachedOp, when the run allows it. Null otherwise.
  std::shared_ptr<const KernelLaunch> kernel_launch;
  ~Executor();
};

// Builds a CachedOp from a lowered graph. Learns non-differentiable ops from
// MXNet's refusal ("... is non-differentiable ...") and retries with BlockGrad.
// `per_op_autograd`: a dynamic CachedOp whose whole graph MXNet inlines (static_alloc off,
// inline_limit above its size): run under record(), MXNet runs and records its ops one by one
// (CachedOp::DynamicForward), so a later backward is eager's, op for op. A static CachedOp is
// one autograd node instead, whose backward always runs all of its ops.
std::shared_ptr<Executor> compile(const Trace& trace, const std::vector<OutputSpec>& outputs,
                                  std::unordered_set<std::string>* nondifferentiable, bool fuse,
                                  LoweredGraph* lowered_out, bool per_op_autograd = false);

// Sets MXNet's thread-local autograd state for the lifetime of the guard.
struct AutogradState {
  int prev_rec = 0, prev_train = 0;
  AutogradState(bool rec, bool train);
  ~AutogradState();
};

// Sets MXNet's numpy shape semantics for this thread to a trace's (np_shape) for the lifetime
// of the guard: they are per thread, and another thread's flush runs this thread's trace (a 0-d
// or zero-size result fails shape inference under the legacy semantics). A no-op when they are
// already the trace's, or on (for every thread) by MXNet's global switch.
struct NumpyShapeState {
  int prev = -1;  // the state to restore, -1 for nothing changed
  explicit NumpyShapeState(bool np);
  ~NumpyShapeState();
};

// The arrays an executor is run on: the trace's inputs in CachedOp order, the outputs MXNet
// writes (in-place update results excluded, placeholders included), and the arrays our
// library ops write in place (Executor::layout_inputs / layout_outputs).
struct LaunchArrays {
  std::vector<NDArrayHandle> ins, outs, ours_write;
  bool stable_params = false;  // run with Executor::params when they apply (Config::stable_params)
  bool direct_kernel = false;  // run Executor::kernel_launch when it applies (Config::direct_kernels)
  bool kernel_launched = false;  // set by invoke_cached_op: the run was Executor::kernel_launch
};
LaunchArrays launch_arrays(const Executor& exe, const Trace& trace, const std::vector<OutputSpec>& outputs);

// Runs with a changed parameter after which a CachedOp with stable inputs as parameters is given
// up (MXNet binds again at each such run): Executor::StableParams, fragment.cc's StableInputs.
constexpr int kParamMisses = 4;

// A static CachedOp of graph `json` whose inputs flagged in `stable` are parameters
// (param_indices, the others data_indices), as a hybridized block declares its weights; null
// when no input is stable or MXNet refuses. C API only: callable with or without the GIL.
std::shared_ptr<void> param_cached_op(const std::string& json, const std::vector<char>& stable);

// Hands MXNet one run of an executor (its results written into `outs`); MXNet's return code.
// `op`: another CachedOp of the same graph to run instead (see fragment.cc, stable inputs);
// without one, the executor's parameter CachedOp when `arrays.stable_params` (Executor::params).
int invoke_cached_op(const Executor& exe, LaunchArrays& arrays, CachedOpHandle op = nullptr);

// Runs an executor on the trace's arrays under the trace's autograd state.
void run(Executor& exe, const Trace& trace, const std::vector<OutputSpec>& outputs);

// Runs the trace op by op through MXNet's imperative API: the eager fallback,
// exact by construction. Intermediates get temporary arrays.
void run_eagerly(const Trace& trace, const std::vector<OutputSpec>& outputs);

// Per value, the array run_eagerly writes it into (null: a temporary it makes): an external
// input's array, an output's array, an out= target, and, for a value the program no longer
// holds, the array eager MXNet wrote it into when a later op of the trace writes that array
// again (the op may read it back, and an error stored there stays, as eagerly).
std::vector<NDArrayHandle> replay_arrays(const Trace& trace, const std::vector<OutputSpec>& outputs);

class ExecutorCache {
 public:
  explicit ExecutorCache(size_t capacity) : capacity_(capacity) {}
  std::shared_ptr<Executor> find(const Key128& key);
  // Inserts; returns the number of evicted entries.
  size_t insert(const Key128& key, std::shared_ptr<Executor> exe);
  void set_capacity(size_t c);
  size_t size() const { return map_.size(); }
  size_t capacity() const { return capacity_; }
  void clear();
  std::vector<std::shared_ptr<Executor>> entries() const;  // most recent first

 private:
  size_t evict_to(size_t n);
  size_t capacity_;
  std::list<std::pair<Key128, std::shared_ptr<Executor>>> lru_;
  std::unordered_map<Key128, decltype(lru_)::iterator, Key128Hash> map_;
};

}  // namespace minpy
