#include "fuse.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "exact_activation.h"
#include "mxapi.h"
#include "mxparse.h"
#include "parts.h"
#include "rewrite.h"
#include "updates.h"

namespace minpy {

namespace {

enum Kind { kNone, kUnary, kScalar, kBinary, kClip, kSplit, kSlice, kUpdate };

// Ops per elementwise group at most: the program builder recurses along the chain, so this
// bounds its stack use (a trace may hold 10000 ops), and keeps each program's buffers small.
constexpr size_t kMaxGroupOps = 512;

struct Rule {
  Kind kind;
  const char* instr;  // the kernel instruction
  bool scalar_first;  // _rminus_scalar, _rdiv_scalar
};

const std::unordered_map<std::string, Rule>& rules() {
  static const std::unordered_map<std::string, Rule> m = {
      {"relu", {kUnary, "relu_nan"}}, {"sigmoid", {kUnary, "sigmoid_f32"}}, {"tanh", {kUnary, "tanh"}},
      {"exp", {kUnary, "exp"}}, {"log", {kUnary, "log"}}, {"sqrt", {kUnary, "sqrt"}},
      {"rsqrt", {kUnary, "rsqrt"}}, {"square", {kUnary, "square"}}, {"abs", {kUnary, "abs"}},
      {"negative", {kUnary, "neg"}}, {"reciprocal", {kUnary, "recip"}}, {"softsign", {kUnary, "softsign"}},
      {"Activation", {kUnary, ""}},  // act_type picks the instruction
      {"_mul_scalar", {kScalar, "mul"}}, {"_plus_scalar", {kScalar, "add"}}, {"_minus_scalar", {kScalar, "sub"}},
      {"_rminus_scalar", {kScalar, "sub", true}}, {"_div_scalar", {kScalar, "div"}},
      {"_rdiv_scalar", {kScalar, "div", true}},
      {"elemwise_add", {kBinary, "add"}}, {"_plus", {kBinary, "add"}}, {"_add", {kBinary, "add"}},
      {"broadcast_add", {kBinary, "add"}}, {"broadcast_plus", {kBinary, "add"}},
      {"elemwise_sub", {kBinary, "sub"}}, {"_minus", {kBinary, "sub"}}, {"_sub", {kBinary, "sub"}},
      {"broadcast_sub", {kBinary, "sub"}}, {"broadcast_minus", {kBinary, "sub"}},
      {"elemwise_mul", {kBinary, "mul"}}, {"_mul", {kBinary, "mul"}}, {"broadcast_mul", {kBinary, "mul"}},
      {"elemwise_div", {kBinary, "div"}}, {"_div", {kBinary, "div"}}, {"broadcast_div", {kBinary, "div"}},
      {"clip", {kClip, "clip"}},
      {"SliceChannel", {kSplit, ""}}, {"split", {kSplit, ""}}, {"slice_axis", {kSlice, ""}},
      // MXNet's NumPy interface (mx.np, npx): on float32 these run the kernels of the legacy
      // ops above, forward and backward (eager results compared bit for bit, 800K inputs and
      // the special values: tests/test_np_fusion.py)
      {"_npi_tanh", {kUnary, "tanh"}}, {"_npi_exp", {kUnary, "exp"}}, {"_npi_log", {kUnary, "log"}},
      {"_npi_sqrt", {kUnary, "sqrt"}}, {"_npi_square", {kUnary, "square"}}, {"_npi_absolute", {kUnary, "abs"}},
      {"_npi_negative", {kUnary, "neg"}}, {"_npi_reciprocal", {kUnary, "recip"}},
      {"_npx_relu", {kUnary, "relu_nan"}}, {"_npx_sigmoid", {kUnary, "sigmoid_f32"}},
      {"_npi_multiply_scalar", {kScalar, "mul"}}, {"_npi_add_scalar", {kScalar, "add"}},
      {"_npi_subtract_scalar", {kScalar, "sub"}}, {"_npi_rsubtract_scalar", {kScalar, "sub", true}},
      {"_npi_true_divide_scalar", {kScalar, "div"}}, {"_npi_rtrue_divide_scalar", {kScalar, "div", true}},
      {"_npi_add", {kBinary, "add"}}, {"_npi_subtract", {kBinary, "sub"}}, {"_npi_multiply", {kBinary, "mul"}},
      {"_npi_true_divide", {kBinary, "div"}},
  };
  return m;
}

std::string attr(const Node& n, const char* key, const char* dflt) { return attr_value(n.attrs, key, dflt); }

// The instruction of node `n` of `t` (a rule's; Activation's by its act_type and input,
// exact_activation.h), empty when none.
std::string instr_of(const Trace& t, const Node& n) {
  auto it = rules().find(n.op->name);
  if (it == rules().end()) return "";
  if (n.op->name != "Activation") return it->second.instr;
  const char* instr = n.in.empty() ? nullptr
                                   : activation_instr(attr(n, "act_type", ""), t.values[n.in[0]].aval, t.training);
  return instr ? instr : "";
}

bool f32_cpu(const AVal& a) { return a.dtype == 0 && a.dev_type == 1; }

bool same_dims(const AVal& a, const AVal& b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

int64_t last_dim(const AVal& a) { return a.ndim ? a.dims[a.ndim - 1] : 1; }
int64_t rows(const AVal& a) {
  int64_t r = 1;
  for (int i = 0; i + 1 < a.ndim; ++i) r *= a.dims[i];
  return r;
}

// (1,..,1,C) against an output (..,C): one row read for every output row.
bool row_broadcast(const AVal& in, const AVal& out) {
  return in.ndim >= 1 && in.ndim <= out.ndim && last_dim(in) == last_dim(out) && rows(in) == 1;
}

std::string shape_attr(const AVal& a) {
  std::string s = "(";
  for (int i = 0; i < a.ndim; ++i) s += (i ? "," : "") + std::to_string(a.dims[i]);
  return s + (a.ndim == 1 ? ",)" : ")");
}

int axis_of(const Node& n, const char* dflt, int ndim) {
  int ax = std::atoi(attr(n, "axis", dflt).c_str());
  return ax < 0 ? ax + ndim : ax;
}

bool transcendental(const std::string& instr) {
  return instr == "sigmoid_f32" || instr == "tanh" || instr == "exp" || instr == "log" || instr == "sigmoid_dnnl" ||
         instr == "tanh_dnnl";
}

// MXNet's clip backward kernel ignores the request and writes: a grad_req='add' variable
// whose only reader is a clip gets its gradient overwritten eagerly, where a fused unit's
// gradient reaches the variable through _copy, which adds (fuzz seeds 317469, 402635: 0.33
// eager vs 0.65 after two backward() calls). Such a clip stays MXNet's op, so the graph's
// backward hands it the variable's request as eager's does (with several readers MXNet sums
// first, fused or not). Unknown roles count as such variables (Value::adds_gradient).
bool clips_an_added_gradient(const Trace& t, const Node& n) {
  const Value& in = t.values[n.in[0]];
  return in.node < 0 && in.ext && in.adds_gradient;
}

// A slice of whole rows (axis 0 of a 2-D array) whose input no unit makes (a batched
// projection's result, projections.h): a unit reads those rows in place. Its input is never a
// unit member, whose program would have to run over the other rows too.
bool row_block(const Trace& t, const Node& n) {
  const Value& in = t.values[n.in[0]];
  if (in.aval.ndim != 2 || axis_of(n, "0", 2) != 0) return false;
  if (in.node >= 0 && rules().count(t.nodes[in.node].op->name)) return false;
  const int64_t begin = std::atoll(attr(n, "begin", "0").c_str()), rows = t.values[n.out[0]].aval.dims[0];
  // one row would broadcast over its consumer's rows: left to MXNet, so that consumer still fuses
  return rows > 1 && begin >= 0 && begin + rows <= in.aval.dims[0];
}

// The node's kind if our kernels can run it, else kNone. Under autograd recording only
// what the elementwise kernel's gradient covers: same-shape operands (a broadcast's
// gradient is a reduction), no splits or slices (their gradient writes part of a wider
// array), no optimizer updates. `update_key`: an optimizer update's grouping key (updates.h).
// `recorded`: the node is in the trace's recorded part (Trace::recorded_node).
Kind classify(const Trace& t, const Node& n, bool recorded, std::string* update_key) {
  if (update_op(n.op->name)) {
    if (recorded) return kNone;
    *update_key = update_group_key(t, n);
    return update_key->empty() ? kNone : kUpdate;
  }
  auto it = rules().find(n.op->name);
  if (it == rules().end()) return kNone;
  if (recorded) {
    Kind k = it->second.kind;
    if (k == kSplit || k == kSlice) return kNone;
    if (k == kClip && clips_an_added_gradient(t, n)) return kNone;
    if (k == kBinary)
      for (int v : n.in)
        if (!same_dims(t.values[v].aval, t.values[n.out[0]].aval)) return kNone;
  }
  for (int v : n.in)
    if (!f32_cpu(t.values[v].aval)) return kNone;
  for (int v : n.out)
    if (!f32_cpu(t.values[v].aval)) return kNone;
  Kind k = it->second.kind;
  // an np scalar op given is_int (mx.np's own calls never pass it) stays MXNet's
  if (k == kScalar && !attr(n, "is_int", "").empty()) return kNone;
  // A NaN constant stays MXNet's op: where the array's element is a NaN too, MXNet's kernel
  // returns the element's NaN, ours the constant's (the compiler may swap a commutative
  // operation's operands; only the sign and payload bits differ).
  if (k == kScalar && std::isnan(mx_scalar_as_float(attr(n, "scalar", kScalarDefault)))) return kNone;
  if (n.out.empty()) return kNone;
  const AVal& out = t.values[n.out[0]].aval;
  switch (k) {
    case kUnary:
      if (n.op->name == "Activation" && instr_of(t, n).empty()) return kNone;
      // fallthrough
    case kScalar:
    case kClip:
      return n.in.size() == 1 && n.out.size() == 1 && same_dims(t.values[n.in[0]].aval, out) ? k : kNone;
    case kBinary:
      if (n.in.size() != 2 || n.out.size() != 1) return kNone;
      for (int v : n.in) {
        const AVal& a = t.values[v].aval;
        if (!same_dims(a, out) && a.size() != 1 && !row_broadcast(a, out)) return kNone;
      }
      return k;
    case kSplit: {
      const AVal& in = t.values[n.in[0]].aval;
      if (n.in.size() != 1 || in.ndim < 1 || mx_bool(attr(n, "squeeze_axis", "False"))) return kNone;
      return axis_of(n, "1", in.ndim) == in.ndim - 1 ? k : kNone;
    }
    case kSlice: {
      const AVal& in = t.values[n.in[0]].aval;
      if (n.in.size() != 1 || in.ndim < 1) return kNone;
      if (axis_of(n, "0", in.ndim) == in.ndim - 1) return k;
      return row_block(t, n) ? k : kNone;
    }
    default:
      return kNone;
  }
}

// What MXNet's backward kernel of a fusible op reads besides the output gradient (the same
// reads as the unit's backward program, cpp/kernels/fused_grad.cc): its operands, its result,
// or neither (sums, differences, products with a constant).
enum class GradReads { kNothing, kOperands, kResult };
GradReads grad_reads(const Trace& t, const Node& n) {
  auto it = rules().find(n.op->name);
  if (it == rules().end()) return GradReads::kOperands;
  const Rule& rule = it->second;
  const std::string instr = instr_of(t, n);
  switch (rule.kind) {
    case kUnary:
      // relu's too (relu_grad of its output, for `relu` and Activation's relu alike)
      if (instr == "sigmoid_f32" || instr == "tanh" || instr == "exp" || instr == "sqrt" || instr == "relu_nan" ||
          instr == "relu")
        return GradReads::kResult;
      return instr == "neg" ? GradReads::kNothing : GradReads::kOperands;
    case kScalar:  // x op constant: only _rdiv_scalar's derivative reads x
      return rule.scalar_first && instr == "div" ? GradReads::kOperands : GradReads::kNothing;
    case kBinary:
      return instr == "mul" || instr == "div" ? GradReads::kOperands : GradReads::kNothing;
    default:
      return GradReads::kOperands;
  }
}

struct Group {
  Kind kind;            // kUpdate, or kUnary for every elementwise group
  std::string key;      // update groups: op and shared hyper-parameters
  AVal shape;           // elementwise groups: the iteration space so far
  std::vector<int> members;
};

// Builds the elementwise kernel's program for one group (see cpp/kernels for the grammar).
class ProgramBuilder {
 public:
  ProgramBuilder(const Trace& t, const std::vector<int>& group_of, int g, const AVal& out_shape)
      : t_(t), group_of_(group_of), g_(g) {
    C_ = last_dim(out_shape);
    R_ = rows(out_shape);
  }
  bool ok = true;
  bool heavy = false;  // uses a transcendental function (worth a kernel even alone)
  std::vector<int> in_values;
  std::vector<std::string> access, program;

  int emit(int v, int64_t shift) {
    int p = t_.values[v].node;
    if (p < 0 || group_of_[p] != g_) return load(v, shift);
    const AVal& a = t_.values[v].aval;
    if (a.size() == 1) shift = 0;  // a scalar chain: the same value at every element
    auto key = std::make_pair(v, shift);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    const Node& n = t_.nodes[p];
    const Rule& rule = rules().at(n.op->name);
    int r = -1;
    if (rule.kind == kSplit) {
      r = emit(n.in[0], shift + t_.values[v].index * last_dim(a));
    } else if (rule.kind == kSlice && row_block(t_, n)) {
      if (rows(a) != R_) return fail();  // its rows broadcast over the unit's: not a block to read
      r = load(n.in[0], shift, std::atoll(attr(n, "begin", "0").c_str()));
    } else if (rule.kind == kSlice) {
      int64_t width = last_dim(t_.values[n.in[0]].aval);
      std::string b = attr(n, "begin", "0");
      int64_t begin = std::atoll(b.c_str());
      r = emit(n.in[0], shift + (begin < 0 ? begin + width : begin));
    } else {
      if (a.size() != 1 && !(rows(a) == R_ && shift + C_ <= last_dim(a))) return fail();
      std::vector<int> regs;
      for (int u : n.in) regs.push_back(emit(u, t_.values[u].aval.size() == 1 ? 0 : shift));
      if (!ok) return 0;
      const std::string instr = instr_of(t_, n);
      heavy |= transcendental(instr);
      if (rule.kind == kUnary) {
        r = push(instr + " " + std::to_string(regs[0]));
      } else if (rule.kind == kScalar) {
        // The float32 kernel computes with float(scalar), the scalar as MXNet reads it (mxparse.h).
        int c = constant(mx_scalar_as_float(attr(n, "scalar", kScalarDefault)));
        r = rule.scalar_first ? push(instr + " " + std::to_string(c) + " " + std::to_string(regs[0]))
                              : push(instr + " " + std::to_string(regs[0]) + " " + std::to_string(c));
      } else if (rule.kind == kClip) {
        r = push("clip " + std::to_string(regs[0]) + " " + exact_float(mx_float_field(attr(n, "a_min", "0"))) + " " +
                 exact_float(mx_float_field(attr(n, "a_max", "0"))));
      } else {
        r = push(instr + " " + std::to_string(regs[0]) + " " + std::to_string(regs[1]));
      }
    }
    if (!ok) return 0;
    memo_[key] = r;
    return r;
  }

 private:
  const Trace& t_;
  const std::vector<int>& group_of_;
  int g_;
  int64_t R_ = 1, C_ = 1;
  std::map<std::pair<int, int64_t>, int> memo_, loads_;
  std::map<std::string, int> consts_;

  int fail() {
    ok = false;
    return 0;
  }
  int push(const std::string& s) {
    program.push_back(s);
    return static_cast<int>(program.size()) - 1;
  }
  int constant(float v) {
    std::string lit = exact_float(v);
    auto it = consts_.find(lit);
    if (it != consts_.end()) return it->second;
    return consts_[lit] = push("c " + lit);
  }
  // A read of an array from outside the group, at column offset `shift` (and from row `row0` on:
  // a row block, rows R_ of its rows).
  int load(int v, int64_t shift, int64_t row0 = -1) {
    const AVal& a = t_.values[v].aval;
    std::string acc;
    int64_t key_shift = shift;
    if (row0 >= 0) {
      if (row0 + R_ > rows(a) || shift + C_ > last_dim(a)) return fail();
      key_shift = row0 * last_dim(a) + shift;
      acc = std::to_string(key_shift) + "," + std::to_string(last_dim(a)) + ",1";
    } else if (a.size() == 1) {
      acc = "0,0,0", key_shift = -1;
    } else if (rows(a) == R_ && shift + C_ <= last_dim(a)) {
      acc = std::to_string(shift) + "," + std::to_string(last_dim(a)) + ",1";
    } else if (rows(a) == 1 && last_dim(a) == C_ && shift == 0) {
      acc = "0,0,1";
    } else {
      return fail();
    }
    auto key = std::make_pair(v, key_shift);
    auto it = loads_.find(key);
    if (it != loads_.end()) return it->second;
    in_values.push_back(v);
    access.push_back(acc);
    return loads_[key] = push("ld " + std::to_string(in_values.size() - 1));
  }
};

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

std::string summary_of(const Trace& t, const std::vector<int>& members) {
  std::vector<std::string> names;
  for (int m : members) {
    const std::string& name = t.nodes[m].op->name;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return std::to_string(members.size()) + " ops: " + join(names, ", ");
}

// `saved`: member results the unit's backward reads, returned after its outputs (see
// saved_for_backward in plan_fusion); the kernel's backward takes no gradient for them.
bool build_elementwise(const Trace& t, const std::vector<int>& group_of, int g, const Group& grp,
                       const std::vector<char>& escapes, const std::vector<char>& used_outside,
                       const std::vector<int>& saved, FusedUnit* u) {
  std::vector<int> outs;
  for (int m : grp.members)
    for (int v : t.nodes[m].out)
      if (escapes[v] || used_outside[v]) outs.push_back(v);
  if (outs.empty()) return false;
  outs.insert(outs.end(), saved.begin(), saved.end());
  const AVal& shape = t.values[outs[0]].aval;
  for (int v : outs)
    if (!same_dims(t.values[v].aval, shape)) return false;
  ProgramBuilder pb(t, group_of, g, shape);
  std::vector<std::string> out_regs;
  for (int v : outs) out_regs.push_back(std::to_string(pb.emit(v, 0)));
  if (!pb.ok) return false;
  if (grp.members.size() < 2 && !pb.heavy) return false;  // one cheap op: MXNet's own kernel is as good
  u->op = "_minpy_fused_elemwise";
  u->attrs = {{"num_inputs", std::to_string(pb.in_values.size())},
              {"num_outputs", std::to_string(outs.size())},
              {"out_shape", shape_attr(shape)},
              {"access", join(pb.access, ";")},
              {"program", join(pb.program, ";")},
              {"outputs", join(out_regs, ",")}};
  if (!saved.empty()) u->attrs.push_back({"saved", std::to_string(saved.size())});
  u->in = pb.in_values;
  u->out = outs;
  return true;
}

bool build_update(const Trace& t, const Group& grp, const std::vector<char>& used_outside,
                  const std::vector<int>& written_into, FusedUnit* u) {
  UpdateUnit unit;
  if (!build_update_unit(t, grp.members, used_outside, written_into, &unit)) return false;
  u->op = unit.op;
  u->attrs = std::move(unit.attrs);
  u->in = std::move(unit.in);
  u->out = std::move(unit.out);
  u->weights_in_place = unit.in_place;
  return true;
}

}  // namespace

bool may_fuse(const Trace& t, size_t i) {
  std::string key;
  return classify(t, t.nodes[i], t.recorded_node(i), &key) != kNone;
}

FusionPlan plan_fusion(const Trace& t, const std::vector<char>& live, const std::vector<std::vector<int>>& preds,
                       const std::vector<char>& escapes, const std::vector<int>& written_into,
                       const std::vector<int>& head_gradients) {
  FusionPlan plan;
  const size_t n_nodes = t.nodes.size();
  plan.unit_of_node.assign(n_nodes, -1);

  std::vector<int> group_of(n_nodes, -1);
  std::vector<Group> groups;
  std::vector<std::vector<uint64_t>> reach(n_nodes);  // groups each node depends on (bitset)
  auto depends = [&](int node, int g) {
    const auto& b = reach[node];
    return static_cast<size_t>(g / 64) < b.size() && ((b[g / 64] >> (g % 64)) & 1);
  };
  std::unordered_map<std::string, int> open_update;  // hyper-parameter key -> newest update group

  for (size_t i = 0; i < n_nodes; ++i) {
    if (!live[i]) continue;
    const Node& n = t.nodes[i];
    std::vector<int> ps;
    for (int v : n.in)
      if (t.values[v].node >= 0) ps.push_back(t.values[v].node);
    for (int d : preds[i]) {
      if (d < 0) continue;
      if (d >= static_cast<int>(i)) return FusionPlan{{}, std::vector<int>(n_nodes, -1)};  // not in trace order
      ps.push_back(d);
    }
    std::string update_key;
    const bool recorded = t.recorded_node(i);
    Kind k = classify(t, n, recorded, &update_key);
    int chosen = -1;
    // Joining g is legal when no input reaches g through a node outside it.
    auto legal = [&](int g, bool allow_inside) {
      for (int p : ps) {
        if (group_of[p] == g) {
          if (!allow_inside) return false;
        } else if (depends(p, g)) {
          return false;
        }
      }
      return true;
    };
    if (k == kUpdate) {
      auto it = open_update.find(update_key);
      if (it != open_update.end() && legal(it->second, false)) chosen = it->second;
      if (chosen < 0) {
        chosen = static_cast<int>(groups.size());
        groups.push_back({kUpdate, update_key, AVal(), {}});
        open_update[update_key] = chosen;
      }
    } else if (k != kNone) {
      const AVal& out = t.values[n.out[0]].aval;
      const AVal& in0 = t.values[n.in[0]].aval;
      bool reshapes = k == kSplit || k == kSlice;
      for (auto v = n.in.rbegin(); v != n.in.rend() && chosen < 0; ++v) {
        int p = t.values[*v].node;
        int g = p >= 0 ? group_of[p] : -1;
        if (g < 0 || groups[g].kind == kUpdate || groups[g].members.size() >= kMaxGroupOps) continue;
        if (t.recorded_node(p) != recorded) continue;  // a forward unit and the update after backward() stay apart
        const AVal& gs = groups[g].shape;
        bool fits = reshapes ? same_dims(gs, in0) : (same_dims(gs, out) || gs.size() == 1);
        if (fits && legal(g, true)) chosen = g;
      }
      if (chosen < 0) {
        chosen = static_cast<int>(groups.size());
        groups.push_back({kUnary, "", out, {}});
      }
      groups[chosen].shape = out;  // a split narrows the space; a scalar chain widens to its consumer
    }
    group_of[i] = chosen;
    if (chosen >= 0) groups[chosen].members.push_back(static_cast<int>(i));
    auto& mine = reach[i];
    for (int p : ps) {
      if (reach[p].size() > mine.size()) mine.resize(reach[p].size(), 0);
      for (size_t w = 0; w < reach[p].size(); ++w) mine[w] |= reach[p][w];
    }
    if (chosen >= 0) {
      if (static_cast<size_t>(chosen / 64) >= mine.size()) mine.resize(chosen / 64 + 1, 0);
      mine[chosen / 64] |= uint64_t(1) << (chosen % 64);
    }
  }

  // Values read by a live node of another group (or of none).
  std::vector<char> used_outside(t.values.size(), 0);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (!live[i]) continue;
    for (int v : t.nodes[i].in) {
      int p = t.values[v].node;
      if (p >= 0 && (group_of[i] < 0 || group_of[i] != group_of[p])) used_outside[v] = 1;
    }
  }

  // Under recording, a value's gradient is the sum of one contribution per read, plus, for
  // a graph output, its head gradient from outside the graph (not for one returned through
  // BlockGrad: OutputSpec::stop_gradient). Two terms add up to the same bits in either order;
  // with more, MXNet's sum is its graph's (ElementWiseSum of the terms in its pass's order,
  // rounding otherwise for 3 or 4 terms than a chain of adds), which a fused unit would
  // change by adding its own reads first: such values stay with MXNet's ops (a head read
  // twice: fuzz seed 9716324).
  // A backward node's heads count as read once (their gradient from outside, the head
  // gradient); the variables and head-gradient arrays it also reads get no contribution from it.
  std::vector<char> sum_unlike_eager;
  if (t.recording) {
    std::vector<int> reads(t.values.size(), 0);
    for (size_t i = 0; i < n_nodes; ++i) {
      if (!live[i] || (t.backward >= 0 && static_cast<int>(i) > t.backward)) continue;  // not the update after it
      const Node& n = t.nodes[i];
      size_t counted = n.in.size();
      if (static_cast<int>(i) == t.backward)
        counted = std::min(counted, static_cast<size_t>(std::max(0, std::atoi(attr_value(n.attrs, "num_heads", "0").c_str()))));
      for (size_t k = 0; k < counted; ++k) ++reads[n.in[k]];
    }
    if (t.runs_recorded())
      for (size_t v = 0; v < t.values.size(); ++v) reads[v] += head_gradients[v];
    sum_unlike_eager.assign(t.values.size(), 0);
    // A held result the graph returns through BlockGrad and reads too: the gradient pass hands
    // a unit making it a zero array for that output, which its backward would add to the
    // reads' contributions, and 0 + -0 is +0 where eager's sum has only the reads (random
    // programs: 1 of 1,000 gave +0 for eager's -0 through a relu).
    for (size_t v = 0; v < t.values.size(); ++v)
      sum_unlike_eager[v] = reads[v] > 2 || (t.runs_recorded() && escapes[v] && head_gradients[v] == 0 &&
                                               reads[v] > 0 && t.values[v].node >= 0);
    // A value a unit makes, reads and hands out (a graph output, or read by a node outside the
    // unit): the unit's backward adds the gradient it is handed for it to its reads'. Where
    // nothing outside gives the value a real gradient (it is only held, or read by ops with no
    // gradient or whose results reach no head) MXNet's pass hands a zero array, which eager's
    // sum never holds, and 0 + -0 is +0 (z = y * w; (z * z).sum() with y = 0 and w < 0: eager's
    // z gets -0, y's gradient -0 * w = +0; the unit's z got +0, y's gradient -0).
    std::vector<int> heads;  // of the backward in this graph; none known when MXNet's runs later
    if (t.backward >= 0) {
      const Node& b = t.nodes[t.backward];
      const int num_heads = std::atoi(attr_value(b.attrs, "num_heads", "0").c_str());
      for (int k = 0; k < num_heads && k < static_cast<int>(b.in.size()); ++k) heads.push_back(b.in[k]);
    }
    std::vector<uint8_t> gradient;
    std::vector<char> skipped_unused;
    if (!heads.empty()) eager_gradient_pass(t, heads, &gradient, &skipped_unused);
    auto real_gradient_from = [&](const Node& c, size_t k) {  // c's k-th input: may get a real gradient
      if (k < 32 && (c.op->zero_grad_inputs >> k & 1u)) return false;
      if (heads.empty()) return true;  // a later backward: whether c's results reach it is unknown
      for (int o : c.out)
        if (gradient[o] == kRealGradient) return true;
      return false;
    };
    std::vector<char> real_from_outside(t.values.size(), 0);  // a node outside its unit gives one
    for (size_t c = 0; c < n_nodes; ++c) {
      if (!live[c] || (t.backward >= 0 && static_cast<int>(c) >= t.backward)) continue;
      const Node& cn = t.nodes[c];
      for (size_t k = 0; k < cn.in.size(); ++k) {
        const int p = t.values[cn.in[k]].node;
        if (p >= 0 && (group_of[c] < 0 || group_of[c] != group_of[p]) && real_gradient_from(cn, k))
          real_from_outside[cn.in[k]] = 1;
      }
    }
    for (size_t i = 0; i < n_nodes; ++i) {
      if (!live[i] || group_of[i] < 0) continue;
      for (int v : t.nodes[i].in) {
        const int p = t.values[v].node;
        if (p < 0 || group_of[p] != group_of[i] || !(escapes[v] || used_outside[v])) continue;
        const bool head = heads.empty() ? escapes[v] && head_gradients[v] > 0
                                        : std::find(heads.begin(), heads.end(), v) != heads.end();
        if (!head && !real_from_outside[v]) sum_unlike_eager[v] = 1;
      }
    }
  }
  auto exact_gradient = [&](const Group& grp) {
    for (int m : grp.members) {
      for (int v : t.nodes[m].in)
        if (sum_unlike_eager[v]) return false;
      for (int v : t.nodes[m].out)
        if (sum_unlike_eager[v]) return false;
    }
    return true;
  };

  // A recorded graph whose backward MXNet's autograd runs later: between the forward and that
  // backward the program may write in place any array the graph read or returned (MXNet
  // performs `x -= y` under record() before refusing it: fuzz seeds 28753, 321949, 562348).
  // Eager's backward then reads, per op, what its derivative reads as it is *then*: an input
  // array (the written data) or the op's own saved result. A unit's backward reads exactly
  // those, so that any such write gives eager's gradients by construction: a value the unit
  // loads, from the array the backward node is handed (the graph input itself, or the result
  // of the op outside the unit, which is the user's array where the user holds it), and each
  // member result a derivative reads (tanh's output, a product's operand, ...), saved by the
  // forward as an extra output, never recomputed from inputs that may have been written
  // since. A derivative reading a graph input whose gradient is added (graph.cc reads it
  // through _copy, a forward-time copy) keeps the group MXNet's ops.
  auto saved_for_backward = [&](int g, const Group& grp, std::vector<int>* saved) {
    for (int m : grp.members) {
      const Node& n = t.nodes[m];
      const GradReads r = grad_reads(t, n);
      if (r == GradReads::kNothing) continue;
      for (int v : r == GradReads::kOperands ? n.in : n.out) {
        const Value& val = t.values[v];
        if (val.node < 0 && val.adds_gradient) return false;
        if (val.node < 0 || group_of[val.node] != g || escapes[v] || used_outside[v]) continue;
        if (std::find(saved->begin(), saved->end(), v) == saved->end()) saved->push_back(v);
      }
    }
    return true;
  };

  for (size_t g = 0; g < groups.size(); ++g) {
    const Group& grp = groups[g];
    if (t.recorded_node(grp.members[0]) && !exact_gradient(grp)) continue;
    std::vector<int> saved;
    if (t.runs_recorded() && grp.kind != kUpdate && !saved_for_backward(static_cast<int>(g), grp, &saved)) continue;
    FusedUnit u;
    if (grp.kind == kUpdate) {
      // One MXNet update alone stays MXNet's op; one of ours is a kernel call already. A NAG
      // update written over its own weight needs our kernel in place (or an eager run).
      const bool ours = t.nodes[grp.members[0]].op->ours;
      bool reads_back = false;
      for (int m : grp.members) reads_back = reads_back || reads_back_new_weight(t, t.nodes[m]);
      if ((grp.members.size() < 2 && !ours && !reads_back) || !build_update(t, grp, used_outside, written_into, &u))
        continue;
      if (reads_back && !u.weights_in_place) continue;
    } else if (!build_elementwise(t, group_of, static_cast<int>(g), grp, escapes, used_outside, saved, &u)) {
      continue;
    }
    u.members = grp.members;
    u.summary = summary_of(t, grp.members);
    for (int m : grp.members) plan.unit_of_node[m] = static_cast<int>(plan.units.size());
    plan.units.push_back(std::move(u));
  }
  return plan;
}

}  // namespace minpy
