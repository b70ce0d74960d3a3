// Before a direct launch (kernel_launch.h) runs one of the kernel library's stand-ins for MXNet's
// small operators (cpp/kernels/step_ops.cc: log_softmax, pick, mean, ... and their gradients),
// that stand-in is run against MXNet's own operator for the node's shapes and attributes, on
// three random draws (wide magnitudes; then NaN, +-inf, +-0, subnormals and +-FLT_MAX mixed in;
// pick's index with columns out of range, fractions, huge and NaN values). One differing bit and
// the graph keeps CachedOp. Checked once per process for each form (kernel_check.h checked_once).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernel_launch.h"
#include "trace.h"

namespace minpy {

// Whether `run(program, ...)` gives MXNet's `op` (attributes `attrs`) on float32 inputs of
// `in_shapes`, one output of `out_shape`, on CPU `dev_id`, bit for bit. GIL held.
bool step_op_agrees(const std::string& op, const std::vector<Attr>& attrs,
                    const std::vector<std::vector<int64_t>>& in_shapes, const std::vector<int64_t>& out_shape,
                    const void* program, FusedProgramRun run, int dev_id);

}  // namespace minpy
