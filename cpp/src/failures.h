// Ops that fail while they run, and the arrays their failure may have reached.
//
// Some ops pass shape and type inference and fail only when they run, on the data (potrf of
// a matrix that is not positive definite, an inverse of a singular one). MXNet's engine then
// stores the error on the op's output arrays and on every array computed from them
// afterwards (an op reading or writing such an array is skipped and inherits the error); the
// first read of any of them raises it, once, and clears it for all. Arrays that do not
// depend on the failed op are unaffected.
//
// A compiled graph cannot keep that promise: MXNet runs a CachedOp's nodes as one engine
// operation (bulked), so a failure reaches every output of the graph, and the graph's
// internal buffers keep the error into its next run. So a trace that contains an op that
// can fail runs op by op (exactly as eager code would), and so does a trace that reads or
// writes an array such a run may have left an error on (a *suspect*), until a *probe* --
// an engine operation that reads the arrays, runs only if none holds an error, and never
// consumes one -- has shown they are clean.
#pragma once
#include <mxnet/c_api.h>

#include <string>
#include <vector>

#include "graph.h"
#include "trace.h"

namespace minpy {

// Whether MXNet's op may fail at run time on its data (decided once per op by name).
bool op_can_fail(const std::string& name);

// tile broadcasts over two axes per input axis. MXNet's broadcast kernel takes at most 5 axes
// once it has merged neighbouring axes (BroadcastReduceShapeCompact), and beyond that fails while it runs ("Too many
// reduction axes"; eager: the first read raises). Decided per call from the shape and `reps`.
bool tile_can_fail(const AVal& input, const std::vector<Attr>& attrs);

// A reduction (sum, mean, max ... over `axis`) likewise: at most 5 axes once merged.
bool reduce_can_fail(const AVal& input, const std::vector<Attr>& attrs);

// The rule of an op, decided once from its name (OpInfo::fail_rule); kNever for most.
FailRule fail_rule(const std::string& op_name);

// BatchNorm's backward fails in MXNet 1.9.1 ("Check failed: !is_view", ndarray.cc:649; fuzz seeds
// 1148047, 1310057, 1423199) when its 2-d data is a oneDNN-layout result of concat along axis 1,
// directly or through oneDNN's Activation (which keeps the layout); whether concat leaves that
// layout depends on the parts' shapes, so every such concat counts. The forward runs and the first
// read of a gradient raises, eagerly; a compiled graph would hand the error to all its results.
//   makes_onednn_concat_result: a call whose result may be one: concat of 2-d parts along axis 1,
//   or Activation of a value that may be one (`in`: the call's input values in `t`);
//   note_onednn_concat_result: its result array (remembered by storage chunk, a bounded set);
//   may_be_onednn_concat_result: an array that may be one (a reused chunk: op by op, still exact);
//   batch_norm_backward_can_fail: a BatchNorm recorded under autograd whose data value `data` of
//   `t` is one (made in the trace or before it).
bool makes_onednn_concat_result(const Trace& t, const std::string& op_name, const std::vector<Attr>& attrs,
                                const std::vector<int>& in);
void note_onednn_concat_result(NDArrayHandle h);
bool may_be_onednn_concat_result(NDArrayHandle h);
bool batch_norm_backward_can_fail(const Trace& t, const std::string& op_name, int data);

// Ops MXNet 1.9.1 fails while they run ("Check failed: !is_view", ndarray.cc) when an input is a
// view (a row, slice or reshape) of an array oneDNN left in its own blocked layout: CopyFromTo
// (`_copyto`: astype, copy, copyto, nd.array(x), x[:] = y, as_in_context to another context),
// any array of RNN, Deconvolution's weight (measured on every legacy and numpy op:
// tests/stress/find_onednn_view_failures.py; fuzz seed 1654348). Which arrays have that layout
// (results of Convolution, Deconvolution, Pooling, some concats, and of Activation or BatchNorm
// over them) is known only once they are computed, so such a call reading a view runs as
// MXNet's op where it is called, and its results are probed (probe_arrays).
bool view_input_can_fail(const std::string& op_name, int input);

// Pushes a probe over the arrays (an eager call that may have failed while it runs wrote them):
// they are suspects until it has seen them clean.
void probe_arrays(const std::vector<NDArrayHandle>& arrays);

// The gradient buffers of these arrays (those that are variables) are probed after the next
// backward() (probe_gradients_after_backward): a BatchNorm above ran as MXNet's own op (an eager
// fallback, a hybridized block), whose backward may fail.
void watch_gradients(const std::vector<NDArrayHandle>& arrays);

// watch_gradients over a recorded trace's inputs (its external arrays): the backward() after it
// may reach their variables, and leave a failure on their gradient buffers.
void watch_input_gradients(const Trace& t);

// Whether this call of an op may fail at run time on these inputs: tile or a reduction over
// too many axes (above), a scalar slice assignment or a 4-d image op given more than 5 axes,
// a oneDNN concat or BatchNorm given more than 6, sort/argsort of float16 on CPU ("This
// operation does not support float16", raised by the kernel, so eager's first read raises),
// take(mode='raise') (its indices are checked as it runs), norm with another out_dtype than its
// input's, amp_cast between dtypes oneDNN cannot reorder, SoftmaxActivation(mode='channel') of
// fewer than 3 axes.
bool call_can_fail(FailRule rule, const std::vector<const AVal*>& inputs, const std::vector<Attr>& attrs);

// The twin of an op that is recorded when this call may fail at run time: the same MXNet
// operator with `can_fail` set (one per op, made on first use).
OpInfo& failing_twin(const OpInfo& op);

// Whether MXNet raises run-time op errors when the op is called (NaiveEngine) rather than at
// the first read: then ops that can fail run eagerly where they are recorded.
bool errors_are_synchronous();

// Why the trace must run op by op ("" when a compiled graph is exact): it holds an op that
// can fail, or reads or writes a suspect array. Counts the first culprit as a fallback.
std::string needs_per_op_run(const Trace& t, const std::vector<OutputSpec>& outputs);

// After a per-op run of the trace: the arrays its failing-capable part wrote become
// suspects, and one probe is pushed to learn when they are clean.
void note_per_op_run(const Trace& t, const std::vector<OutputSpec>& outputs);

// MXNet's backward() has just run (after the pending work was flushed): the gradient buffers of
// the variables read by the recorded per-op runs since the last one become suspects, probed. A
// gradient can fail to compute where the forward did not (BatchNorm over a oneDNN-layout concat
// result), and MXNet's engine then leaves the error on those buffers as on any op's outputs.
void probe_gradients_after_backward();

// Whether any of the arrays may hold an error a per-op run left there (one launch of a
// compiled graph reading it would carry the error into all its results).
bool any_suspect(const std::vector<NDArrayHandle>& arrays);

// Suspect arrays not yet shown clean (for tests and stats).
size_t suspect_count();
// Whether an array a run may have left an error on is still unproven clean (probing again those
// whose last probe found an error: it may have been read since). For infer.cc's trial runs.
bool errors_may_be_pending();

}  // namespace minpy
