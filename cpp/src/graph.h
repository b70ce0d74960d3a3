// Lowering: a trace plus the set of values still needed becomes one NNVM graph
// (MXNet symbol JSON), and a readable printout of the same graph.
//
// Lowering drops dead nodes, wraps outputs of non-differentiable ops in
// BlockGrad (CachedOp always builds a backward graph), and adds NNVM control
// dependencies where dataflow alone would not keep program order:
//   * a node writing into an array's memory runs after every reader of the
//     array's old value (the read-before-write hazard of in-place outputs);
//   * an op that updates an input in place (aux state) runs after earlier
//     readers and before later readers of it;
//   * random ops run in program order, so they draw the same numbers as eager.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "fuse.h"
#include "trace.h"

namespace minpy {

// One graph output: a value, and the external it overwrites (-1 for a lazy array).
// `stop_gradient`: the output is returned through BlockGrad (flush.cc, order_for_backward).
struct OutputSpec {
  int value;
  int target_ext;
  NDArrayHandle handle;
  bool stop_gradient = false;
};

struct LoweredGraph {
  std::string json;
  std::vector<int> input_values;  // value id of each graph variable, in JSON variable order
  // Emitted units in order: a trace node id, or trace size + index into fusion.units.
  std::vector<int> items;
  FusionPlan fusion;
  int num_nodes = 0;              // operator nodes (BlockGrad wrappers excluded)
  int kernel_calls = 0;           // nodes that are our kernels (fused units, multi-tensor SGD)...
  int kernel_ops = 0;             // ...and the recorded ops they stand for
  int gradient_nodes = 0;         // nodes MXNet's gradient pass added for a backward() in the graph
  // FullyConnected nodes run as our _minpy_fc (exact_fc.h): trace node id -> the op's attributes.
  std::map<int, std::vector<Attr>> fc_nodes;
  // Those of them that apply the Activation(relu) reading them (act=relu): -> that node's id.
  std::map<int, int> fc_relu;
  // Per output (in `outputs` order): 1 if an in-place update unit writes it into its array
  // itself; such outputs are no graph heads. The heads are the other outputs in order,
  // then one placeholder (a (1,) float32 array) per in-place unit.
  std::vector<char> output_in_place;
  int placeholders = 0;
  // Arrays our library ops write: external values they mutate, and outputs (by index) they
  // produce into existing arrays. Made default-layout before each run (executor.h).
  std::vector<int> ours_mutate;
  std::vector<int> ours_write_outputs;
  // The trace lowered, when a rewrite made a new one from the recorded trace (batched
  // projections, projections.h: node ids differ, value ids are the same); null otherwise.
  std::shared_ptr<const Trace> trace;
};

// Which trace nodes the outputs depend on.
std::vector<char> live_nodes(const Trace& t, const std::vector<OutputSpec>& outputs);

LoweredGraph lower(const Trace& trace, const std::vector<OutputSpec>& outputs,
                   const std::unordered_set<std::string>& nondifferentiable, bool fuse);

// The graph as text (of g.trace when set, else of `trace`): one line per node, `%7 = relu(%6)  (32, 32) float32  # train.py:41`.
std::string print_graph(const Trace& trace, const LoweredGraph& g, const std::vector<OutputSpec>& outputs,
                        const std::function<std::string(int)>& loc_str, const std::string& title);

}  // namespace minpy
