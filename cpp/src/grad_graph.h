// Gradients inside our own graph.
//
// loss.backward() on a pending recorded trace does not run the trace under autograd and
// then MXNet's autograd backward (a graph launch, then Imperative::Backward, which builds
// and plans a backward graph on every call). backward.cc appends a backward node to the
// trace; when lowering reaches it, the graph emitted so far is handed to MXNet's own
// gradient pass -- NNVM's "MXGradient", the pass CachedOp and autograd build their backward
// graphs with -- and the forward and gradient nodes come back as one node list. The step's
// forward and backward then run as one CachedOp launch, with MXNet's backward kernels.
#pragma once
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace minpy {

// The node list of a symbol JSON being built (graph.cc's lowering state).
struct JsonNodes {
  std::string nodes;            // the node objects, comma-separated
  std::vector<int> row_ptr{0};  // node_row_ptr: first output entry of each node
  std::vector<int> arg_nodes;   // the variables
  int next = 0;                 // number of nodes
};

using Entry = std::pair<int, int>;  // (node id, output index)

struct GradientSplice {
  std::vector<int> node_map;  // node id before the splice -> its id after
  std::vector<Entry> grads;   // per x: the entry holding its gradient
  int gradient_nodes = 0;     // operator nodes the gradient pass added
};

// Replaces `g`'s nodes by the same nodes plus the gradient of `ys` (with head gradients
// `ograds`) with respect to the variables `xs`, all given as entries of `g`. Outputs of
// added nodes whose op is in `nondifferentiable` are read through BlockGrad (CachedOp builds
// a gradient of every graph, and MXNet's backward ops mostly have none). Throws MXError
// if MXNet's pass refuses the graph.
GradientSplice splice_gradient(JsonNodes* g, const std::vector<Entry>& ys, const std::vector<Entry>& ograds,
                               const std::vector<Entry>& xs, const std::unordered_set<std::string>& nondifferentiable);

}  // namespace minpy
