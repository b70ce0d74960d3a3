// Per-weight optimizer updates gathered as they are called, launched as one kernel call.
//
// W5's form, `nd.sgd_mom_update(w, g, m, lr=.., momentum=.., out=w)` once per weight: recorded
// into the trace, each call cost about 0.6 us of bookkeeping (slots, values, a node, the key)
// and its flush another 0.25 us turning the trace back into the one update it is
// (trace_as_direct_update, updates.h), on top of the engine's own ~0.25 us an update for the push.
// While nothing else is pending, such a call instead goes straight into the thread's batch: its
// arrays and float32 rates, what that flush would have read out of the trace. The batch is
// pushed (launch_update_directly, update_launch.h) before anything else happens on the thread:
// at the next call that does not join it, at any flush of the thread (a read, a guarded C API
// call, scope exit, another thread's flush_all), before a fragment joins the trace, and once it
// holds 64K weight elements or segment_ops calls, so that MXNet runs one batch while Python
// gathers the next (as segments do). The same kernel on the same arrays with the same rates in the same order as the
// recorded path: the same bits.
//
// A call joins only where its outcome is known (gather_update): an update op our kernel runs,
// given out= its own weight; every array a dense array of the weight's shape, of the dtype the
// kernel wants, on the weight's CPU context, each in a storage of its own (a second update of an
// array already in the batch pushes the batch first); attributes and arrays the recording path's
// signature cache accepts (asked once per set of attributes); autograd not recording,
// classic shape semantics, no fragment being captured, nothing recorded on any thread. Any
// other call takes the recording path, which raises MXNet's errors where eager code would.
// If the launch is refused when the batch is pushed (an array not allocated yet, or a suspect of a
// failed op, failures.h), the calls are recorded as if they had never been gathered, and run with
// the trace.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "direct_update.h"

namespace minpy {

struct ThreadState;
struct OpInfo;

struct UpdateBatch {
  DirectUpdate update;                 // the launch being gathered
  std::vector<pybind11::object> calls;  // each call's arguments: its arrays alive until the push
  std::unordered_set<const void*> storage;  // storage chunks the batch's arrays sit in
  uint64_t shared_key = 0;             // the calls' kernel and shared attributes (one plan a launch)
  int64_t elements = 0;                // of the weights gathered
  bool empty() const { return calls.empty(); }
  bool holds(NDArrayHandle h) const;   // h's storage is one the batch updates
};

// The call _imperative_invoke(handle, ndargs, keys, vals, out, is_np_op, output_is_list) of
// `op` (argv), made with autograd not recording and classic shape semantics: true if it joined
// the thread's batch (the caller returns `out`); false if it must be recorded (the batch may have
// been pushed first). GIL held.
bool gather_update(ThreadState& ts, OpInfo& op, PyObject* const* argv);

// Launches the thread's batch, if any (`cause` as a flush's, for stats() and the log). A refused
// launch records the batch's calls into the (empty) trace instead, for the caller's flush or the
// next segment cut to run. GIL held.
void push_update_batch(ThreadState& ts, const std::string& cause);

}  // namespace minpy
