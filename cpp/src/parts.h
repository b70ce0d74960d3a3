// A recorded segment as independent parts, each run as its own graph (see parts.cc).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"
#include "trace.h"

namespace minpy {

// The parts of a trace, in the order of their first op, or nothing if it is one part. A part's
// slots borrow the parent's Python references: only the parent releases them.
// `held`: per value, the array holding it for the program (a graph output), else null. An array
// through which another part reads its value is marked Slot::handed_on in the part computing it.
// `part_of_node`, if given: per node of t, the index of its part (all 0 when it is one part).
std::vector<Trace> independent_parts(const Trace& t, const std::vector<NDArrayHandle>& held,
                                     std::vector<int>* part_of_node = nullptr);

// A part is still one autograd node: a backward whose heads depend on any of its results runs
// the backward of every op in it, with zero gradients for the results they do not depend on.
// Eagerly, only the ops the heads depend on run. That shows where one of these does not lead
// to a head: a variable (its gradient buffer written with zeros), an input with recorded history
// (the backward goes on into it), a BatchNorm in training (its backward updates the running
// statistics), a Custom op (its Python backward runs). `heads`: the values of the heads of the
// backward about to run (`known_heads`: one of them must be reached), else the results a later
// backward could start from, each alone (all must be reached). Why, and in `op` the op concerned
// (or the first reading such an input); "" when none (the part may run as one graph).
std::string backward_could_do_more(const Trace& t, const std::vector<OutputSpec>& heads, bool known_heads,
                                  std::string* op);

// The inputs (bits) whose gradient MXNet's FGradient gives as its zero node (zeros_like, from
// MakeZeroGradNodes): comparisons, logical ops, rounding, argmax/argsort/topk, BlockGrad, one_hot,
// shape_array, zeros_like/ones_like, the random draws *_like and _sample_* (all inputs); where's
// condition; the rhs of broadcast_like,
// reshape_like. Found by probing MXNet 1.9.1 eagerly (tests/stress/find_zero_gradient_ops.py).
// Decided once per op: OpInfo::zero_grad_inputs (Trace::zero_grad_ops: the trace holds one).
uint32_t zero_gradient_inputs(const std::string& op);

// Eager MXNet's gradient pass from `heads` (values of t) over the trace, every op its own
// autograd node: per value, the gradient it gets (kNoGradient: none reaches it; kZeroNode:
// only MXNet's zero nodes; kRealGradient: an array), and per node whether the pass skips its
// backward (its output gradients are all zero nodes: CheckGradAllZero, see below).
// `sums_zero_nodes`: the same pass as splice_gradient runs it inside our graph (grad_graph.cc).
// Eager's aggregation (AggregateGradient) drops zero nodes from a sum of gradients; that pass's
// default one sums them, so a value handed zero nodes by two reads or more (and nothing real)
// gets an elemwise_sum, a real gradient, and the ops before it run their backward with zeros:
// 0 / -3.88 = -0 and 0 * inf = NaN where eager's gradient is +0 (fuzz seed 11220377).
enum GradientKind : uint8_t { kNoGradient, kZeroNode, kRealGradient };
void eager_gradient_pass(const Trace& t, const std::vector<int>& heads, std::vector<uint8_t>* value_gradient,
                         std::vector<char>* skipped, bool sums_zero_nodes = false);

// MXNet's gradient pass (nnvm Gradient with zero_ops, CheckGradAllZero in MakeNonlossGradNode)
// gives an op whose output gradients are all such zero nodes zero nodes for its inputs instead
// of running its backward: eagerly, ops whose results reach a head only through a comparison or
// floor are skipped, and 0 * inf in their backward never happens. A part run as one CachedOp
// hides that across its boundary: its backward hands real (zero-filled) arrays to the ops
// before it, and gets real arrays for its results, so it and they run with zeros: NaN where
// eager's gradient is 0 (fuzz seeds 414917, 212037). Inside one part nnvm's pass skips as eager
// does, except through our fused units. `part_of_node`: per node its part (independent_parts);
// `head_sets`: the heads of each backward to expect, as values of t; `handed_on`: per value,
// whether it is a result of its part's graph (held, or read by another part); `per_op`: per
// part, whether MXNet records its ops one by one anyway (never flagged). Returns per part
// whether it must run op by op (each op its own autograd node, as eager's), and in `op` the
// first op concerned.
std::vector<char> parts_hiding_zero_gradients(const Trace& t, const std::vector<int>& part_of_node, int parts,
                                              const std::vector<std::vector<int>>& head_sets,
                                              const std::vector<char>& handed_on, const std::vector<char>& per_op,
                                              bool fuse, std::string* op);

}  // namespace minpy
