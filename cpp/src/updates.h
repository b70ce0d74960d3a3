// Optimizer updates and our multi-tensor kernels (cpp/kernels/multi_update.cc).
//
// Which MXNet optimizer ops a kernel stands in for, how their attributes read, and how
// the updates of one step become one kernel call:
//
//   per-weight ops   sgd_update, sgd_mom_update, nag_mom_update, adam_update,
//                    rmsprop_update, rmspropalex_update, mp_sgd_update,
//                    mp_sgd_mom_update, mp_nag_mom_update: recorded as MXNet ops; at
//                    compile time those of one step with the same hyper-parameters
//                    become one multi-tensor call (fuse.cc asks group_key/build_unit).
//   multi-tensor ops multi_sgd_update, multi_sgd_mom_update, multi_mp_sgd_update,
//                    multi_mp_sgd_mom_update (what Trainer's SGD calls, 4 weights at a
//                    time): MXNet 1.9.1 cannot put them in a graph, so they are recorded
//                    as our kernel (record_form), and grouped the same way.
//   a changing lr, wd or rescale_grad (Adam's bias-corrected lr changes every step; lr
//                    and weight-decay schedules; Trainer.step(batch_size) with another
//                    batch size): the call is recorded as our kernel with hyper_inputs=1,
//                    each weight's (lr, wd, rescale_grad) a (3,) float32 input array: the
//                    graph stays the same.
//   AdaGrad          its Python update is eleven elementwise ops per weight; while a
//                    scope is open frontend.py records it as _minpy_multi_adagrad_update.
//
// Our kernels compute with exactly the float32 values MXNet would (see mxparse.h), in
// MXNet's float order: results are bit-identical to eager.
#pragma once
#include <string>
#include <vector>

#include "graph.h"
#include "trace.h"
#include "update_launch.h"

namespace minpy {

struct UpdateOp;  // what one MXNet (or our) optimizer op is, in updates.cc

// The update description of an op name (MXNet's or our kernel's), or null.
const UpdateOp* update_op(const std::string& name);

// The multi-tensor kernel's name for an update op.
const std::string& update_kernel(const UpdateOp& u);

// Arrays per weight of the op (weight, gradient, states...).
int update_stride(const UpdateOp& u);

// A per-weight op of MXNet's (sgd_mom_update, adam_update, ...), not a multi-tensor one or ours.
bool update_per_weight(const UpdateOp& u);

// Whether one per-weight call's arrays (weight, gradient, states: `n` of them) suit our kernel
// updating them in place where they are: the dtypes update_kernel_fits asks for, each on the
// weight's context, a plain CPU one, and of the weight's shape (MXNet's shape inference
// refuses any other: the recording path then raises its error).
bool update_arrays_fit_in_place(const UpdateOp& u, const AVal* arrays, int n);

// Whether its arrays suit our kernel: float32 (float16 weights and gradients for the
// mixed-precision forms, float32 states), all on the CPU, of one size per weight.
bool update_kernel_fits(const UpdateOp& u, const Trace& t, const std::vector<int>& in);

// A call of `u` recorded as one kernel call: our op's attributes (exact floats) for the
// call's MXNet attributes. `hyper_values` (if not null) receives each weight's learning
// rate, weight decay and rescale_grad (3 floats a weight), and then the attributes say
// hyper_inputs=1 instead of listing them. False if the attributes are not understood.
bool kernel_call_attrs(const UpdateOp& u, const std::vector<Attr>& attrs, size_t num_weights,
                       std::vector<float>* hyper_values, std::vector<Attr>* out);

// Whether arrays (per weight: weight, gradient, states) suit our kernel when it reads them
// directly: the dtypes update_kernel_fits asks for, one size per weight, each in CPU memory of
// any CPU context (cpu, cpu_pinned, cpu_shared).
bool update_arrays_in_cpu_memory_fit(const UpdateOp& u, const std::vector<const AVal*>& arrays);

// A call of MXNet's update op `u` as a direct launch (update_launch.h): our kernel, its shared
// attributes and each weight's float32 rates, as the op would parse them. Arrays, sizes and
// context are the caller's. False if the attributes are not understood (or `u` is ours).
bool direct_update_of(const UpdateOp& u, const std::vector<Attr>& attrs, size_t num_weights, DirectUpdate* d);

// A whole trace as one direct update (update_launch.h), the graph it would compile being one
// call of our kernel with nothing else: every node an update of one group (update_group_key),
// every array it reads made before the trace (no value computed in it), each new weight
// going back only into its own weight array (`outputs` holds nothing else) and one
// rescale_grad for all weights. Fills `d` (arrays, sizes, rates and decays as the kernel
// would read them: lifted values from their input arrays); false if the trace is not such.
bool trace_as_direct_update(const Trace& t, const std::vector<OutputSpec>& outputs, DirectUpdate* d);

// Number of weights a recorded node updates.
size_t update_weights(const UpdateOp& u, const Node& n);

// Grouping at compile time: nodes with equal keys may share one kernel call ("" if the
// node cannot be grouped).
std::string update_group_key(const Trace& t, const Node& n);

// MXNet's NAGMomKernel reads the weight again after storing the new one, so a call given
// out= its weight's own array (the usual form) computes the momentum from the new weight.
// True when node n is such a call (for any of its weights): only our kernel updating the
// weights in place, or an eager run, gives that result; MXNet's op in a graph writes a new
// array and reads the old weight.
bool reads_back_new_weight(const Trace& t, const Node& n);

// The kernel call standing for `members` (trace nodes with one group key, in trace order).
// `in_place`: set when every new weight only goes back into its own (external) weight
// array, which the kernel then updates in place. False if it cannot be built.
struct UpdateUnit {
  std::string op;
  std::vector<Attr> attrs;
  std::vector<int> in, out;
  bool in_place = false;
};
bool build_update_unit(const Trace& t, const std::vector<int>& members, const std::vector<char>& used_outside,
                       const std::vector<int>& written_into, UpdateUnit* unit);

}  // namespace minpy
