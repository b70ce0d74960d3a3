// The trace: the sequence buffer of recorded operator calls, in SSA form.
//
// Every array the trace touches has a slot, keyed by its MXNet handle. A slot
// names the SSA value the array holds *now*: an external input (data that
// existed before the trace) or the output of a recorded node. In-place writes
// (`out=`, `+=`, slice assignment) do not mutate anything here; they make a new
// value and point the written array's slot at it (functionalisation). At a
// flush, each array whose current value differs from what it held before is a
// graph output written into that array's own memory.
//
// The structural key is updated as ops arrive, so a flush looks up its
// executor with no further hashing of the sequence. It is canonical: values are
// numbered in order of first appearance, never by handle or MXNet name.
#pragma once
#include <mxnet/c_api.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "aval.h"

namespace minpy {

struct UpdateOp;  // an optimizer update our multi-tensor kernels can run (updates.h)

// How a call of an op may fail while it runs, by its inputs' shapes (failures.h).
enum class FailRule : uint8_t {
  kNever,
  kTile,                    // too many axes once merged
  kReduction,               // likewise, over its `axis`
  kOver5Axes,               // its (one) input has more than 5 axes
  kAnyInputOver5Axes,
  kAnyInputOver6AxesOnCpu,  // oneDNN kernels
  kFloat16SortOnCpu,
  kModeRaise,               // take(mode='raise'): checks its indices while it runs
  kNormOutDtype,            // norm(out_dtype=) other than the input's dtype
  kAmpCastOneDnn,           // amp_cast between dtypes oneDNN's reorder does not know
  kChannelModeUnder3Axes,   // SoftmaxActivation(mode='channel') of fewer than 3 axes
  kSamplerParams,           // a random sampler given a parameter out of its range
  kNumpySamplerParams,      // ... a numpy one, or given an array of parameters
  kPercentile,              // numpy's percentile: q out of [0, 100], or an array of q
};

// What the runtime knows about one MXNet operator (one per creator handle).
struct OpInfo {
  AtomicSymbolCreator creator = nullptr;
  std::string name;
  uint64_t hash = 0;
  std::string var_num_args;  // attribute carrying the input count of variadic ops (concat: num_args)
  const char* lift = "";     // attribute lifted when it changes (rewrite.h), "" if none
  bool effectful = false;  // random draws and side effects (debug prints): never dropped, never reordered
  const UpdateOp* update = nullptr;  // an optimizer update (updates.h), else null
  bool can_fail = false;   // may fail at run time on its data (failures.h): never dropped, never in a graph
  FailRule fail_rule = FailRule::kNever;  // ... or on some input shapes (checked per call)
  uint32_t zero_grad_inputs = 0;  // inputs (bits) MXNet's gradient gives a zero node (parts.h)
  bool mode_independent = false;  // its result does not depend on the training flag (record.cc)
  OpInfo* kernel_twin = nullptr;     // ... and our multi-tensor op that can stand in for it (resolved once)
  // Decided once per op from its name (record.cc), not on every call:
  bool no_symbolic_form = false;  // MXNet 1.9.1 cannot put it in a graph: always runs eagerly
  bool sparse_output = false;     // produces sparse storage (cast_storage: only for stype != default)
  bool expands = false;           // multi_sgd_*: recorded as per-weight updates or our kernel
  bool multi_weight_update = false;  // an optimizer update of several weights in one call (multi_*)
  bool ours = false;              // one of our library ops (_minpy_*, cpp/kernels/)
  // Names record_call tests on every call, compared once here (record.cc op_info):
  bool copyto = false;             // _copyto (copyto, astype, x[:] = y, as_in_context)
  bool rnn = false;                // RNN
  bool activation = false;         // Activation
  bool batch_norm = false;         // is_batch_norm: writes ones into gamma under fix_gamma
  bool batch_norm_data = false;    // BatchNorm, _npx_batch_norm (batch_norm_backward_can_fail)
  bool view_inputs_can_fail = false;  // some input may fail as a view (view_input_can_fail)
};

struct Attr {
  std::string key, val;
  bool operator==(const Attr& o) const { return key == o.key && val == o.val; }
};

// The `scalar` field of MXNet's scalar ops (_mul_scalar, _npi_add_scalar, ...) when a call
// leaves it out: NumpyBinaryScalarParam's default, 1 (we read 0: x * <default> fused had gradient
// 0, eager's 1; tests/test_grad_sweep.py).
constexpr const char* kScalarDefault = "1";

// The value of attribute `key`, or `dflt` when the call did not set it.
inline std::string attr_value(const std::vector<Attr>& attrs, const char* key, const char* dflt) {
  for (const auto& a : attrs)
    if (a.key == key) return a.val;
  return dflt;
}

// The attributes' contribution to an op signature and to the trace key.
inline uint64_t hash_attrs(const std::vector<Attr>& attrs) {
  uint64_t h = 0x41;
  for (const auto& a : attrs) {
    h = mix64(h ^ hash_bytes(a.key.data(), a.key.size()));
    h = mix64(h ^ hash_bytes(a.val.data(), a.val.size()));
  }
  return h;
}

struct Node {
  const OpInfo* op = nullptr;
  std::vector<Attr> attrs;
  std::vector<int> in;       // value ids
  std::vector<int> out;      // value ids
  std::vector<int> mutated;  // external value ids this node updates in place (aux states)
  std::vector<NDArrayHandle> targets;  // per output: the existing array written in place (out=), or null
  int loc = -1;              // source location id (see SourceTable), -1 when not tracked
  uint64_t position = 0;     // the trace key just after this node: the node and everything before it
  uint64_t content = 0;      // what the node is, not where: op, attributes, output avals (segment cuts)
};

struct Value {
  AVal aval;
  int node = -1;   // producing node, -1 for an external input
  int index = 0;   // output index within the node
  NDArrayHandle ext = nullptr;  // the array behind an external input
  // The array the value was first held by (its external array, a new lazy output, an out=
  // target): where eager MXNet wrote it, which an op writing that array again may read back.
  NDArrayHandle home = nullptr;
  // An external input of a recorded trace that may be a variable with grad_req='add' (or whose
  // role cannot be read): its gradient must be added, which our kernels' backward cannot do
  // (lib_api.h passes no request). Part of the trace key, so a compiled graph's choices for it
  // (graph.cc's _gradcopy, fuse.cc) hold whenever the graph is reused.
  bool adds_gradient = false;
};

// Value::adds_gradient of an array read under autograd recording: a variable with
// grad_req='add', or any array while autograd's roles cannot be read.
bool adds_to_gradient(NDArrayHandle h);

// MXNet's batch normalisations (BatchNorm, BatchNorm_v1, SyncBatchNorm, oneDNN's BatchNormWithReLU):
// with fix_gamma (their default) they write ones into their gamma input when they run, a write
// their signatures do not declare, and in training their backward updates the moving statistics.
bool is_batch_norm(const std::string& op_name);

struct Slot {
  int value = -1;      // SSA value the array holds now
  int ext_value = -1;  // the external value it held when the trace first saw it, -1 if none
  void* owner = nullptr;  // opaque: the Python object (managed by the bindings)
  bool ours = false;   // created by the recorder as a lazy output
  bool written = false;  // a graph output of the flush under way (never recycled into the pool)
  bool in_graph = false;  // read or written by an op recorded into the autograd graph (see record.cc)
  // A result another part of the same flush reads (parts.h: independent_parts): a graph output
  // whoever holds the array by the time its part runs. The parts were cut where the program
  // held results, and the program may let go of one while an earlier part runs without the GIL
  // (its thread runs on during another thread's flush of its trace); left unwritten, the part
  // reading it read garbage, outside the autograd graph.
  bool handed_on = false;
};

class Trace {
 public:
  std::vector<Node> nodes;
  std::vector<Value> values;
  std::unordered_map<NDArrayHandle, Slot> slots;
  Key128 key;
  int user_ops = 0;                    // op calls made by the program (an expansion counts once)
  uint64_t user_ops_hash = 0;          // ... and which ops they were: a position independent of scalars
  void note_user_op(uint64_t op_hash) {
    ++user_ops;
    user_ops_hash = mix64(user_ops_hash ^ op_hash);
  }
  std::vector<NDArrayHandle> owned;    // lifted-scalar arrays the trace created; freed after its flush
  std::unordered_map<uint64_t, int> constants;  // lifted scalar -> its value id, deduplicated per trace
  // recording: the segment runs as a recorded graph, its ops join the autograd graph (under
  // autograd.record(), ops whose inputs need no gradient make segments that are not recorded).
  bool recording = false, training = false, np_shape = false;
  // A backward() run inside the graph (backward.h): its node; the graph then runs without
  // autograd (its gradients are graph outputs), though its ops were recorded under it.
  int backward = -1;
  bool can_fail = false;  // holds an op that may fail at run time (failures.h)
  // A read before backward() ran the recorded trace without autograd and left it open
  // (flush.cc, read_keeps_recorded_trace): its first `peeked` nodes' results are in their
  // arrays already; the trace still runs whole, under autograd or with its backward, later.
  size_t peeked = 0;
  uint64_t peek_key = 0;  // the trace's key when it was read so (Runtime::reads_not_kept)
  bool zero_grad_ops = false;  // holds an op whose gradient is a zero node for some input (parts.h)
  // A @minpy_jit.function fragment's: its graph is launched by one C++ call of a replay, with no
  // Python recording beside it, so our two-thread kernels have both cores (exact_fc.cc).
  bool launched_alone = false;
  // The gradient buffers a pending backward node writes (backward.cc keeps the trace open
  // past backward() so that the update joins the graph), by storage chunk. Code reading a
  // gradient reaches the buffer through other handles of the same array (the Trainer's
  // `param._grad`, a new handle from every `w.grad`): canonical() maps those to the handle
  // the backward node's slot is bound to.
  std::unordered_map<const void*, NDArrayHandle> grad_buffers;

  bool empty() const { return nodes.empty(); }
  bool runs_recorded() const { return recording && backward < 0; }
  // Node i belongs to the recorded part: ops recorded under autograd, before a backward node.
  // Nodes after a backward node were recorded with autograd off (the optimizer update).
  bool recorded_node(size_t i) const { return recording && (backward < 0 || static_cast<int>(i) < backward); }

  // The handle the trace knows `h` by: `h` itself, or the gradient buffer `h` is another
  // handle of (the same chunk, offset, shape and dtype).
  NDArrayHandle canonical(NDArrayHandle h) const {
    if (grad_buffers.empty() || slots.count(h)) return h;
    return canonical_grad(h);
  }

  // Begin a trace segment under the given autograd and shape-semantics state. Arrays a call
  // registered before it failed (OpInputError: no node recorded) stay external inputs, keyed and
  // given their gradient role again under the new state (fuzz seed 1608827).
  void start(bool rec, bool train, bool np);

  // The value an array holds now, registering it as an external input if new.
  int value_of(NDArrayHandle h, const AVal* known_aval, Slot** slot_out);
  void key_external(int id);  // value_of's and start()'s: an external input's key part and role

  // Appends a node; returns the id of its first output value.
  int add_node(const OpInfo* op, std::vector<Attr>&& attrs, uint64_t attr_hash, const std::vector<int>& in,
               const std::vector<AVal>& outs, const std::vector<int>& mutated_inputs, int loc);

  // A slot for an array the trace has not seen: a new lazy output (ours), or an existing
  // array written before it was read. Its old contents are no input (ext_value -1).
  Slot& bind(NDArrayHandle h, int value, bool ours, void* owner);

 private:
  NDArrayHandle canonical_grad(NDArrayHandle h) const;

 public:

  // An array the trace knows now holds `value` (a write into it): its slot and the value's home.
  void rebind(Slot& s, NDArrayHandle h, int value) {
    s.value = value;
    if (!values[value].home) values[value].home = h;
  }

  void clear() {
    backward = -1;
    grad_buffers.clear();
    can_fail = false;
    peeked = 0;
    peek_key = 0;
    zero_grad_ops = false;
    launched_alone = false;
    user_ops = 0;
    user_ops_hash = 0;
    owned.clear();
    constants.clear();
    nodes.clear();
    values.clear();
    // clear() keeps every bucket: after one huge trace each later flush would pay for it.
    if (slots.bucket_count() > 8192) std::unordered_map<NDArrayHandle, Slot>().swap(slots);
    else slots.clear();
  }
};

}  // namespace minpy
