// A Trainer step's update launched directly: one engine operation running our multi-tensor
// kernel, instead of a recorded node that a flush hands MXNet as a one-node CachedOp.
//
// Handing MXNet a CachedOp with the ~600 arrays of W5's update costs about 0.5 us per array
// on the Python thread (MXNet copies the NDArray vectors several times while it pushes the
// node), and recording the node as many again (a slot, a value and a key step per array): most
// of a step once the kernel runs in one call. When nothing is recorded yet, the update can
// instead be pushed as it is called: MXNet's engine orders it after every earlier operation
// on its arrays and before every later one (as it orders eager MXNet's own update ops), so
// what runs, and in what order, is what the recorded node would have run: the same kernel
// (cpp/kernels/multi_update.cc, update_all) on the same arrays with the same float32 rates.
//
// Only where that holds: nothing recorded on any thread (a recorded write of a gradient must
// run first), no graph queued for the launcher thread, no fragment being captured (the
// capture must see the op), every array dense, allocated, on one CPU context and in its own
// storage chunk (an engine operation naming one variable twice waits for itself), and none
// a suspect of a failed op (failures.h). Otherwise the caller records the node as before.
//
// The operation writes every array it is given, gradients included: a gradient left in
// oneDNN's blocked layout (a convolution's backward writes one) is turned back to the default
// layout in place before the kernel reads it, as the graph path does for the arrays it writes
// (MXNet hands a library op a default-layout copy of such an input: the same values).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "direct_update.h"
#include "runtime.h"

namespace minpy {

// Pushes the update as one engine operation; false (nothing done) where the conditions above
// do not hold, and the caller records it instead. `flushing`: the update is the trace being
// flushed (flush.cc), which would otherwise run as a graph at this point: what was recorded
// before it on this or another thread is no reason to wait, as it is none for the graph.
bool launch_update_directly(ThreadState& ts, const DirectUpdate& u, bool flushing = false);

// The kernel library's plan for `kernel` with these shared attributes (cached by them) and the
// function that runs it on raw float32 arrays, for a caller that runs the update itself
// (server_update.cc); false without the library or if an attribute does not parse. GIL held.
using UpdatePlanRun = void (*)(const void* plan, int num_weights, void* const* arrays, const int64_t* sizes,
                               const float* lrs, const float* wds);
bool update_plan(const std::string& kernel, const std::vector<std::pair<const char*, std::string>>& attrs,
                 std::shared_ptr<void>* plan, UpdatePlanRun* run);

// How MXNet reads a Python value passed to an op: an attribute field (str(v), dmlc's
// parser), an item of a list attribute (repr(v), strtof), or the scalar of `x * s`
// (str(float(v)) parsed as a double, then float). See mxparse.h. GIL held; throws
// py::error_already_set if Python fails.
enum class Text { kField, kItem, kScalar };
float mx_value(PyObject* v, Text how);

}  // namespace minpy
