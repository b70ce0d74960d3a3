// Why a trace missed the cache: the difference from the nearest cached graph,
// in the user's terms ("input %2 shape (32, 128) -> (17, 128)",
// "op 14 _mul_scalar scalar 0.5 -> 0.25", "sequence diverged at op 37: relu vs tanh").
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph.h"

namespace minpy {

// One step of a trace as it was recorded: an external input or an op.
struct Step {
  bool is_input = false;
  std::string op;                 // op name (empty for inputs)
  std::vector<Attr> attrs;
  std::vector<int> in;
  AVal aval;                      // input's aval, or the op's first output
  int loc = -1;
  int value = -1;                 // first value id the step defines
  int nout = 1;                   // values the step defines
};

std::vector<Step> steps_of(const Trace& trace);

struct Executor;
std::string nearest_difference(const Trace& trace, const std::vector<OutputSpec>& outputs,
                               const std::vector<std::shared_ptr<Executor>>& cached,
                               const std::function<std::string(int)>& loc_str);

}  // namespace minpy
