// Fusion: replacing groups of trace nodes by one call of our own kernels.
//
// Runs at compile time (a cache miss), on the live nodes of a trace, before
// lowering. Two kinds of group, both executed by the kernel library in
// cpp/kernels (loaded into MXNet with MXLoadLib, so they are ordinary graph ops):
//
//   * elementwise groups -> `_minpy_fused_elemwise`: chains of float32 CPU
//     elementwise ops (arithmetic, scalar ops, activations, clip) plus
//     last-axis splits/slices feeding them (an LSTM cell's gate block), run as
//     one vectorized loop over the output; intermediates never reach memory.
//   * optimizer updates -> `_minpy_multi_<rule>_update` (updates.h): every update
//     of a step with the same rule and hyper-parameters (sgd_update, adam_update,
//     our kernels recorded for multi_sgd_* ...) becomes one multi-tensor call
//     (MXNet's own multi-tensor ops cannot be put in a graph in 1.9.1, and
//     per-weight ops pay a kernel launch each).
//
// Grouping is greedy in trace order and keeps the graph acyclic: a node joins a
// group only if none of its inputs (data or ordering) depends on that group
// through a node outside it. Under autograd recording only elementwise groups are
// formed, of same-shape ops, where no value's gradient sums more than two
// contributions: the kernel's backward (cpp/kernels/fused_grad.cc) then gives
// MXNet's gradients (see classify() and plan_fusion()). A group whose shapes do not
// fit one iteration space is dropped (its nodes stay MXNet ops), never half-fused.
#pragma once
#include <string>
#include <vector>

#include "trace.h"

namespace minpy {

struct FusedUnit {
  std::string op;             // the kernel library's op name
  std::vector<Attr> attrs;    // its attributes (for the elementwise kernel: the program)
  std::vector<int> members;   // trace node ids it replaces, in trace order
  std::vector<int> in;        // value ids it reads
  std::vector<int> out;       // value ids it produces
  std::string summary;        // for the graph printout: "13 ops: elemwise_add, SliceChannel, ..."
  // Optimizer updates whose new weights only go back into the weights' own arrays: the
  // kernel updates them in place (weights_in_place=1) and has one placeholder output, so
  // `out` holds values that are realised by mutation, not as graph outputs.
  bool weights_in_place = false;
};

struct FusionPlan {
  std::vector<FusedUnit> units;
  std::vector<int> unit_of_node;  // per trace node: index into units, or -1

  // Lowering's unit id of a trace node: the node itself, or (trace size + unit index) if fused.
  int unit_id(int node) const {
    int u = unit_of_node[node];
    return u >= 0 ? static_cast<int>(unit_of_node.size()) + u : node;
  }
};

// `live`: nodes kept by lowering; `preds`: per node, the earlier nodes it must
// follow besides its data inputs (control dependencies); `escapes`: per value,
// nonzero if it is a graph output; `written_into`: per value, the external value
// whose array it is written into when that is its only use as a graph output, else -1;
// `head_gradients`: per value, how many of its graph outputs a backward of the graph (run
// under record()) hands a gradient from outside (those not returned through BlockGrad).
FusionPlan plan_fusion(const Trace& t, const std::vector<char>& live, const std::vector<std::vector<int>>& preds,
                       const std::vector<char>& escapes, const std::vector<int>& written_into,
                       const std::vector<int>& head_gradients);

// Whether node i is of a kind our kernels run (it may join a fused unit).
bool may_fuse(const Trace& t, size_t i);

}  // namespace minpy
