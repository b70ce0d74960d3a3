// backward() inside our graph (backward.cc): the forward and its gradient as one launch.
#pragma once
#include <mxnet/c_api.h>

#include <vector>

#include "trace.h"

namespace minpy {

struct ThreadState;

// The op name of the backward node a trace gets for a backward() run inside its graph.
extern const char* const kBackwardOp;

bool is_backward_node(const Node& n);

// loss.backward() (MXAutogradBackwardEx with these heads and head gradients, null for
// ones) on the pending trace of `ts`: runs it as one graph computing the gradients, and
// returns true; false, having changed nothing, when MXNet's own backward must run.
bool backward_in_graph(ThreadState& ts, const std::vector<NDArrayHandle>& heads,
                       const std::vector<NDArrayHandle>& head_grads, bool retain_graph, bool train);

}  // namespace minpy
