// A graph made only of kernels we run ourselves -- fused elementwise programs, _minpy_fc's
// forward and gradients, the multi-tensor updates that write weights in place, the Concat along
// the first axis that batches a recurrent cell's input projections, and the kernel library's
// stand-ins for MXNet's small loss operators (log_softmax, pick, mean, a scalar multiply and
// their gradients, ones_like, BlockGrad: cpp/kernels/step_ops.cc, each checked against MXNet's
// operator per shape first, launch_check.h) -- run without MXNet's CachedOp: one engine
// operation that calls the kernel library's programs itself, one after the other (a value only
// a later kernel reads lives in a buffer of the operation's own). W3's training step (forward,
// gradients, the update) is one such operation.
//
// Why: handing MXNet a CachedOp costs its bookkeeping per node (W3's 20-node step: 63 us of the
// Python thread's 86 us a step, measured around close_scope), and the work goes to the engine's
// worker thread and back (W1 as an @function: ~28 us of CPU a call, 8 of them the kernel). The
// operation is pushed as FnProperty::kAsync: MXNet's engine
// runs such an operation at once on the pushing thread when nothing is pending on its arrays,
// and otherwise queues it behind what is pending like any other operation
// (ThreadedEnginePerDevice::PushToExecute). Reads and writes are ordered by the engine, and an
// error of an earlier operation reaches the outputs, as for the CachedOp.
//
// The operation does what MXNet does around a library op: it allocates an array not yet
// allocated, hands the kernel a default-layout copy of an input held in oneDNN's blocked layout
// (NDArray::Reorder2Default), turns an output in that layout back to the default layout before
// overwriting it, and runs the same program on the same float32 data: the same bits. An input
// a kernel writes in place (an update's weights and states) is made default-layout before the
// launch, as before a CachedOp (executor.cc push_default_layout), and written where it is.
//
// Only where that holds (else the caller runs the CachedOp): a CPU context, not under autograd
// recording (the graph must then be an autograd node), dense arrays, and no output sharing its
// storage with another array of the launch (an engine operation naming one variable twice
// waits for itself).
//
// kernel_job.cc reads mxnet::NDArray objects and is compiled with libmxnet.so's string ABI
// (see peek.cc): launch_kernel and what it reads pass no std::string.
#pragma once
#include <mxnet/c_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minpy {

// The kernel library's entry point for one run of a compiled program (fused_elemwise.cc's, and
// fc_op.cc's for _minpy_fc; kernel_launch.cc's own for Concat): null, or why the arrays do not
// fit the program.
using FusedProgramRun = const char* (*)(const void* program, const float* const* in, const int64_t* in_sizes,
                                        float* const* out, const int64_t* out_sizes);

// Where a kernel of the plan reads an operand or writes a result: an array of the launch (a
// graph input: KernelLaunch::input_pos index; a graph head), a buffer of its own for a value
// only later kernels read, or nowhere (a result nobody wants).
struct KernelSlot {
  enum Kind : uint8_t { kInput, kHead, kTemp, kNone };
  Kind kind = kNone;
  int index = -1;
};

struct KernelLaunch {
  struct Step {  // one kernel of the graph, in the graph's order
    std::shared_ptr<void> program;  // the kernel library's compiled program of the node (Concat: none)
    FusedProgramRun run = nullptr;
    std::vector<KernelSlot> inputs, outputs;
    std::vector<int64_t> in_elems, out_elems;
  };
  std::vector<Step> steps;
  std::vector<int> input_pos;        // the graph inputs the kernels read: CachedOp positions, each once
  std::vector<int64_t> input_elems;  // ... and their element counts
  std::vector<char> input_written;   // ... and whether a kernel writes it in place (an update's weights)
  std::vector<int64_t> head_elems;   // per graph head
  std::vector<int64_t> temp_elems;   // per buffer of the launch's own
  int dev_id = 0;                    // the CPU context of every array
};

// kernel_launch.cc: the plan for graph `json` (MXNet symbol JSON as lower() writes it) if all its
// operators are kernels we run and every head is a kernel's result, else null. `input_values`:
// the value of each CachedOp input (Executor::input_values); `input_shapes`: their shapes;
// `head_elems`: the element count of each head; `all_cpu_float32`: every array of the graph is
// float32 on CPU context `dev_id`. GIL held (a stand-in's first use runs its check on MXNet).
std::shared_ptr<const KernelLaunch> plan_kernel_launch(const std::string& json, const std::vector<int>& input_values,
                                                       const std::vector<std::vector<int64_t>>& input_shapes,
                                                       const std::vector<int64_t>& head_elems, bool all_cpu_float32,
                                                       int dev_id);

// kernel_job.cc: pushes one run on arrays `ins` (CachedOp order) and `outs` (graph heads);
// false, with nothing pushed, where the conditions above do not hold. GIL held or not.
bool launch_kernel(const std::shared_ptr<const KernelLaunch>& k, const std::vector<NDArrayHandle>& ins,
                   const std::vector<NDArrayHandle>& outs);
// Whether kernel_job.cc found what it needs in libmxnet.so (checked once, on real arrays).
bool kernel_jobs_work();

}  // namespace minpy
