// Compiled fragments of @minpy_jit.function: guards, capture, replay.
//
// A fragment is a run of statements of a decorated function whose effects are
// all tensor ops (minpy_jit/function/analyze.py decides which). The rewritten
// function calls it as `outs = fragment(in_0, ..., in_n)`, one value per name
// the statements read. This file keeps, per fragment, its *variants*: what one
// run of the statements did (the recorded trace nodes, which arrays they read
// and wrote, what they returned), valid while the variant's guards hold.
//
//   guards   A tree over the inputs, built by the Python capture (capture.py)
//            from what the run read: arrays (shape, dtype, context, storage),
//            Python values (exact type and value), objects reached by
//            attribute or index (type, or identity for modules and functions),
//            the arrays of Gluon parameters, container lengths; plus the
//            autograd and shape-semantics state. Checked in C++ on every call.
//   replay   Outside a jit() scope: one CachedOp launch writing into new
//            arrays (and into the input arrays the statements update in
//            place), or, for a graph made only of our fused kernels, one
//            engine operation running them (kernel_launch.h). Inside a scope: the stored nodes are appended to the
//            thread's trace as one unit, so a loop calling fragments still
//            becomes one graph. No Python runs per op either way.
//   capture  A miss calls back into Python, which runs the statements under
//            the recorder (ordinary jit() recording: the result is correct
//            whatever happens) and then asks capture_end to turn the recorded
//            nodes into a variant -- refused, with the reason, if the run
//            read or wrote an array that is not reachable from the inputs,
//            flushed (read array data), or fell back to eager ops.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "executor.h"
#include "trace.h"

namespace minpy {
namespace py = pybind11;

// One node of a guard tree, in pre-order. `access` says how its value is
// reached from its parent's value (a root is an input of the fragment call).
struct GuardNode {
  // kItem: an entry of the parent object's instance __dict__ (a plain attribute, read
  // without the attribute protocol); kDictEntry: the next entry of a dict, by key; kSelf:
  // the parent's value again (a second check on it).
  enum Access : uint8_t { kRoot, kAttr, kItem, kIndex, kDictEntry, kSelf };
  enum Kind : uint8_t {
    kArray,     // an NDArray of exactly `type` with aval `aval`; a graph input (leaf)
    kValue,     // exact `type` and equal value (floats compared bit for bit)
    kIdentity,  // the very object `expected`
    kType,      // any object of exactly `type` (its attributes are guarded by children)
    kSeq,       // list or tuple of exactly `type` and length `len`; children are its items
    kDict,      // dict of length `len` whose children are entries (kDictEntry by key)
    kLen,       // len(value) == len
    kFreshGrad, // an NDArray whose gradient was written since the last Trainer step (_fresh_grad)
  };
  Access access = kRoot;
  Kind kind = kType;
  int index = 0;                 // kRoot: argument position; kIndex: item position
  py::object key;                // kAttr/kItem: interned attribute name; kDictEntry: the key
  py::object expected;           // kValue / kIdentity
  PyTypeObject* type = nullptr;  // kArray, kValue, kType, kSeq, kDict
  Py_ssize_t len = 0;            // kSeq, kDict, kLen
  AVal aval;                     // kArray
  int leaf = -1;                 // kArray: position among the variant's array leaves
  int children = 0;              // direct children (they follow in pre-order)
  int keep = -1;                 // >= 0: the value is kept for the result (slot number)
  std::string what;              // for messages: "global `scale`"
  std::string where;             // ... and where the fragment reads it: "model.py:12"
  bool set_inside = false;       // kFreshGrad: the fragment's own backward() sets the flag first
};

// How one element of a replayed result is made.
struct ResultNode {
  enum Kind : uint8_t { kNewArray, kLeafArray, kKept, kConst, kTuple, kList, kDict };
  Kind kind = kConst;
  int index = 0;          // kNewArray: output number; kLeafArray: leaf; kKept: kept slot
  int children = 0;       // kTuple/kList/kDict (a dict's children alternate key, value)
  py::object value;       // kConst
};

// What the statements change besides arrays, repeated by each replay as running them would:
//   kAttrDelta  an attribute stepped by a constant (RecurrentCell._counter, Optimizer.num_update);
//   kItemDelta  a dict entry stepped likewise (Optimizer._index_update_count[i]);
//   kClearGrad  an array's fresh-gradient flag cleared (what Trainer.step does to each weight);
//   kAttrSet    an attribute set to a value (Optimizer.rescale_grad, from the guarded batch size).
struct Effect {
  enum Kind : uint8_t { kAttrDelta, kItemDelta, kClearGrad, kAttrSet };
  Kind kind = kAttrDelta;
  int kept = -1;          // kept slot of the object (the array for kClearGrad)
  py::object key;         // attribute name, or dict key
  long long delta = 0;
  py::object value;       // kAttrSet
};

struct FragmentOutput {
  int value = -1;         // value id in the variant's trace
  int leaf = -1;          // >= 0: written into this leaf array in place; -1: a new array
  int target_ext = -1;    // the trace's external value of that leaf, -1 if never read
  bool np = false;        // a new array of the numpy front end (mx.np.ndarray)
  int grad = -1;          // >= 0 (leaf -3): written into the gradient buffer of Variant::grads[grad]
};

// A gradient buffer the fragment's own backward() writes (a training step captured whole:
// `with autograd.record():`, `loss.backward()`, `trainer.step()` in one fragment).
struct GradTarget {
  int variable = -1;         // the leaf whose gradient it is (its grad_req: Variant::leaf_role)
  AVal aval;                 // the buffer's
  std::vector<int> aliases;  // leaves that were handles of the same buffer at capture (param._grad)
};

struct Variant {
  std::vector<GuardNode> guards;
  int num_leaves = 0, num_kept = 0;
  std::vector<int> same_as;       // per leaf: the first leaf holding the same array at capture
  std::vector<char> written;      // per leaf: updated in place by the statements
  // Per leaf read under autograd recording: whether it was a grad_req='add' variable at capture
  // (Value::adds_gradient, -1: not read while recording). The compiled choice depends on it
  // (graph.cc's _gradcopy, fuse.cc's clip rule), as jit()'s trace key does: a guard.
  std::vector<signed char> adds_gradient;
  // The autograd state at the call (a guard). The graph's own state is trace.recording /
  // trace.training: the same, unless the statements open `with autograd.record():` themselves.
  bool recording = false, training = false, np_shape = false;
  Trace trace;                    // the recorded nodes, renumbered; externals are leaves/constants
  // With a backward node (trace.backward >= 0): the buffers it writes, and per leaf what autograd
  // knew of it when the recorded ops read it (-1: not read by them; 0: nothing, MXNet's graph
  // does not hold it; 1 or 2: a variable with that grad_req), which decided what backward()
  // computes: a guard.
  std::vector<GradTarget> grads;
  std::vector<signed char> leaf_role;
  std::vector<uint64_t> attr_hash;  // per node (for appending without rehashing)
  std::vector<int> ext_leaf;      // per value: the leaf feeding an external, -1 otherwise
  std::vector<NDArrayHandle> constants;  // per value: an owned constant array (lifted scalars), else null
  std::vector<FragmentOutput> outputs;   // sorted by value, as a flush orders them
  std::vector<int> new_output_of_value;  // per value: index of the new array it becomes, -1
  int num_new = 0;                // new arrays a replay makes
  std::vector<NDArrayHandle> scratch;    // outputs of effectful nodes nobody reads (owned)
  std::vector<ResultNode> result;
  bool bare_result = false;       // one result value returned as is (not in a tuple)
  std::vector<Effect> effects;
  std::shared_ptr<Executor> exe;  // built on the first replay outside a scope
  bool eager_only = false;        // MXNet refused the graph: replays run the statements
  std::string compile_error;
  Key128 key;
  uint64_t hits = 0;
  // Inputs that are the same arrays call after call (a block's parameters, a global): the
  // variant's own CachedOp declares them as parameters (`param_indices`, what Gluon does for
  // a hybridized block), so MXNet binds the operators reading them once and runs them in
  // engine bulks instead of pushing each operator (W4: 150 pushes -> a few). Decided at the
  // second direct launch by comparing the arrays with the first launch's; given up for good
  // after kParamMisses launches where one of them changed (MXNet re-binds then: right, slower).
  struct StableInputs {
    // The CachedOp with param_indices, or null. Shared: a launch holds it while it waits for
    // the executor (Executor::run_mu), so another thread dropping it meanwhile frees nothing in use.
    std::shared_ptr<void> op;
    std::vector<NDArrayHandle> last;  // the inputs of the previous direct launch...
    std::vector<py::object> held;     // ...held (the stable ones after the decision), so that an
                                      // equal handle is the same array, never a freed one reused
    std::vector<char> stable;         // per input: declared a parameter
    int launches = 0, misses = 0;
    bool decided = false;
  } stable_inputs;
  ~Variant();
};

struct FragmentState {
  std::string name;               // "step: fragment 0 (model.py:10-14)"
  py::object capture;             // Python: capture(*args) -> the statements' result
  std::vector<std::shared_ptr<Variant>> variants;  // most recently used first
  bool disabled = false;          // demoted: every call runs the statements in Python
  bool capturing = false;         // a capture of this fragment is running
  // The fragment's function runs in a jit() scope of its own and a flush follows the fragment
  // at once (the function ends, or .backward()/.asnumpy()... comes next): called in that scope
  // alone with nothing recorded yet, it launches its graph directly instead of appending.
  bool direct_in_own_scope = false;
  uint64_t calls = 0, hits = 0, misses = 0, appended = 0, direct = 0;
  std::string last_miss;          // why the last miss missed ("" for a first call)
};

// Registers the fragment functions on the extension module (bindings.cc calls it).
void register_fragment_api(py::module_& m);

// A C API call that may touch array data was made (intercept.py's guarded library):
// a capture running on this thread cannot be replayed.
void note_data_access(const char* what);
constexpr const char* kGradStateSet = "NDArray._fresh_grad set";  // the cause bindings.cc passes
bool capture_open();  // a capture is running on this thread

}  // namespace minpy
