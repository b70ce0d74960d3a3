// A recorded segment as independent parts, each run as its own graph (see parts.cc).
#pragma once
#include <vector>

#include "trace.h"

namespace minpy {

// The parts of a trace, in the order of their first op, or nothing if it is one part. A part's
// slots borrow the parent's Python references: only the parent releases them.
std::vector<Trace> independent_parts(const Trace& t);

}  // namespace minpy
