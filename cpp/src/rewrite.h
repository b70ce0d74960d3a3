// Scalar lifting: keeping changing Python scalars out of the cache key.
//
// MXNet stores Python scalars as op attributes (`x * 0.37` is _mul_scalar with
// scalar="0.37"; Adam's bias-corrected lr changes every step). Baked into the
// graph, every new value would be a new graph. The rule:
//
//   An attribute position (jit site, op index in the trace, op, attribute) is
//   *hot* once it has been seen with two different values. (Optimizer updates: one
//   position per jit site and op, so all updates of a step are lifted alike.) A hot scalar is
//   lifted: the op is recorded as an equivalent graph whose scalar arrives as a
//   one-element input array, so its value is no longer part of the key.
//
// So a constant scalar stays an attribute (fastest kernels, exact eager
// results) and a changing one costs exactly one recompile. Lifted forms:
//   *_scalar arithmetic/comparison ops -> the broadcast_* op with a (1,..,1) input (mx.np's
//   _npi_*_scalar arithmetic on float arrays -> _npi_multiply etc., which broadcast);
//   optimizer updates with a changing lr, wd or rescale_grad -> our multi-tensor kernel
//   with the three as an input array per weight (updates.h; bit-identical to MXNet's
//   kernels). Where our kernel
//   cannot run (fusion off, other dtypes, GPU), sgd_update, sgd_mom_update,
//   adam_update and multi_sgd_* become elementwise ops with lr as an input (same
//   formula and order of operations as MXNet's kernels, every hyper-parameter written so
//   that MXNet reads back the value its kernel uses: bit for bit); the others keep the lr
//   as an attribute.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "trace.h"

namespace minpy {

// How a rewrite records the nodes it expands to.
class Emitter {
 public:
  virtual ~Emitter() = default;
  // Records op(inputs) and returns the id of its first output value.
  virtual int node(const std::string& op, std::vector<Attr> attrs, std::vector<int> in) = 0;
  // A one-element array (all dims 1, same rank/dtype/context as `like`) holding v; -1 if impossible.
  virtual int constant(double v, int like) = 0;
  // The dtype (MXNet's type flag) of a value.
  virtual int dtype(int value) = 0;
};

// The attribute whose changing value would be lifted for this op, or "" if none.
const char* liftable_attr(const std::string& op);

// Expands a call with a hot attribute. On success fills the op's output values
// and the in-place updates of its inputs (input position, new value).
bool expand_lifted(const std::string& op, const std::vector<Attr>& attrs, const std::vector<int>& in, Emitter& em,
                   std::vector<int>* outs, std::vector<std::pair<int, int>>* updates);

// Ops MXNet cannot infer symbolically (multi_sgd_update, multi_sgd_mom_update):
// always recorded as their per-weight equivalents (sgd_update, sgd_mom_update).
bool needs_expansion(const std::string& op);
bool expand_native(const std::string& op, const std::vector<Attr>& attrs, const std::vector<int>& in, Emitter& em,
                   std::vector<int>* outs, std::vector<std::pair<int, int>>* updates);

}  // namespace minpy
