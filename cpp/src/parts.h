// A recorded segment as independent parts, each run as its own graph (see parts.cc).
#pragma once
#include <string>
#include <vector>

#include "graph.h"
#include "trace.h"

namespace minpy {

// The parts of a trace, in the order of their first op, or nothing if it is one part. A part's
// slots borrow the parent's Python references: only the parent releases them.
// `held`: per value, the array holding it for the program (a graph output), else null.
std::vector<Trace> independent_parts(const Trace& t, const std::vector<NDArrayHandle>& held);

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

}  // namespace minpy
