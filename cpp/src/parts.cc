// A recorded segment (autograd.record()) as independent parts, each run as its own graph.
//
// Eager MXNet records every op as its own node of the autograd graph, and a backward visits
// only the nodes its head depends on. A recorded segment run as one CachedOp is one node: a
// backward from any of its outputs would run the backward of every op in it (BatchNorm
// updates its running statistics there; gradient buffers of unrelated variables are written
// with zeros) and, without retain_graph, clear all of it, so that a second backward from an
// independent result fails ("not in a computational graph": two losses, two backward calls).
// So the segment runs as one graph per independent computation: nodes connected by the values
// they pass each other. Arrays read from outside do not connect them, as a variable read by
// two computations does not join them in MXNet's graph. Nodes that must keep their order stay
// together: those touching an array some node updates in place (BatchNorm's running
// statistics), and random draws, whose program order the parts keep.
//
// A result the program still holds does not connect its producer and its readers either: the
// readers' part takes it as an input (its array, with the producer part's history), as eager's
// graph reads that array. Otherwise a backward from the result alone would run the readers'
// backward too, with zero head gradients, and 0 * inf there is NaN where eager never looks
// (fuzz seeds 31963, 10330, 20015: relu(x) held, pow(relu(x), y) with y < 0 beside it). The
// cut is made only where every producer part comes before its readers' parts.
#include "parts.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <unordered_map>

#include "fuse.h"
#include "mxapi.h"

namespace minpy {

namespace {

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  bool unite(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return false;
    parent[std::max(a, b)] = std::min(a, b);  // the root is the part's first node
    return true;
  }
};

// Node ids of each part, parts in the order of their first node. `cut`: per value, whether
// its readers need not join its producer's part.
std::vector<std::vector<int>> group_nodes(const Trace& t, const std::vector<char>& cut) {
  const int n = static_cast<int>(t.nodes.size());
  UnionFind uf(n);
  std::unordered_map<int, int> toucher;  // external value updated in place -> a node touching it
  std::vector<char> updated(t.values.size(), 0);
  for (const Node& node : t.nodes)
    for (int v : node.mutated) updated[v] = 1;
  for (int i = 0; i < n; ++i)
    for (int v : t.nodes[i].in) {
      if (t.values[v].node >= 0) {
        if (!cut[v]) uf.unite(i, t.values[v].node);
      } else if (updated[v]) {
        auto it = toucher.emplace(v, i).first;
        uf.unite(i, it->second);
      }
    }
  // Random draws keep their program order: running parts by first node must not reorder them.
  for (bool changed = true; changed;) {
    changed = false;
    int last = -1, last_node = -1;
    for (int i = 0; i < n && !changed; ++i) {
      if (!t.nodes[i].op->effectful) continue;
      int root = uf.find(i);
      if (root < last) changed = uf.unite(i, last_node);
      last = std::max(last, root);
      last_node = i;
    }
  }
  std::vector<std::vector<int>> parts;
  std::unordered_map<int, size_t> index_of_root;
  for (int i = 0; i < n; ++i) {
    auto it = index_of_root.emplace(uf.find(i), parts.size()).first;
    if (it->second == parts.size()) parts.emplace_back();
    parts[it->second].push_back(i);
  }
  return parts;
}

}  // namespace

std::vector<Trace> independent_parts(const Trace& t, const std::vector<NDArrayHandle>& held,
                                     std::vector<int>* part_of_node) {
  std::vector<char> cut(t.values.size(), 0);
  for (size_t v = 0; v < t.values.size() && v < held.size(); ++v) cut[v] = held[v] != nullptr;
  std::vector<std::vector<int>> groups = group_nodes(t, cut);
  std::vector<int> part_of_value(t.values.size(), -1);
  auto assign = [&] {
    for (size_t p = 0; p < groups.size(); ++p)
      for (int i : groups[p])
        for (int v : t.nodes[i].out) part_of_value[v] = static_cast<int>(p);
  };
  assign();
  // Parts run in order: a held result must come from an earlier part than its readers'.
  bool ordered = true;
  for (size_t p = 0; p < groups.size() && ordered; ++p)
    for (int i : groups[p])
      for (int v : t.nodes[i].in)
        if (t.values[v].node >= 0 && part_of_value[v] > static_cast<int>(p)) ordered = false;
  if (!ordered) {
    std::fill(cut.begin(), cut.end(), 0);
    groups = group_nodes(t, cut);
    assign();
  }
  if (part_of_node) {
    part_of_node->assign(t.nodes.size(), 0);
    for (size_t p = 0; p < groups.size(); ++p)
      for (int i : groups[p]) (*part_of_node)[i] = static_cast<int>(p);
  }
  std::vector<Trace> parts;
  if (groups.size() <= 1) return parts;
  parts.resize(groups.size());
  std::vector<std::unordered_map<int, int>> value_map(groups.size());  // value in t -> value in the part
  for (size_t p = 0; p < groups.size(); ++p) {
    Trace& part = parts[p];
    auto& vmap = value_map[p];
    part.start(t.recording, t.training, t.np_shape);
    for (int i : groups[p]) {
      const Node& node = t.nodes[i];
      std::vector<int> in;
      for (int v : node.in) {
        const Value& val = t.values[v];
        const bool from_here = val.node >= 0 && part_of_value[v] == static_cast<int>(p);
        in.push_back(from_here ? vmap.at(v) : part.value_of(val.node >= 0 ? held[v] : val.ext, &val.aval, nullptr));
        if (!from_here) vmap[v] = in.back();
      }
      std::vector<AVal> outs;
      for (int v : node.out) outs.push_back(t.values[v].aval);
      std::vector<int> mutated;  // as positions in `in`
      for (int v : node.mutated)
        mutated.push_back(static_cast<int>(std::find(node.in.begin(), node.in.end(), v) - node.in.begin()));
      std::vector<Attr> attrs = node.attrs;
      const uint64_t attr_hash = hash_attrs(attrs);
      const int first = part.add_node(node.op, std::move(attrs), attr_hash, in, outs, mutated, node.loc);
      part.nodes.back().targets = node.targets;
      for (size_t k = 0; k < node.out.size(); ++k) {
        vmap[node.out[k]] = first + static_cast<int>(k);
        part.values[first + k].home = t.values[node.out[k]].home;
      }
    }
  }
  // Values read by a part other than the one computing them, through the array holding them.
  std::vector<char> read_elsewhere(t.values.size(), 0);
  for (size_t p = 0; p < groups.size(); ++p)
    for (int i : groups[p])
      for (int v : t.nodes[i].in)
        if (t.values[v].node >= 0 && part_of_value[v] != static_cast<int>(p)) read_elsewhere[v] = 1;
  // Arrays holding a result: in the part that computes it (the parent trace keeps the references).
  for (const auto& kv : t.slots) {
    const Slot& s = kv.second;
    const int p = part_of_value[s.value];
    if (p < 0) continue;
    const auto& vmap = value_map[p];
    auto ext = s.ext_value >= 0 ? vmap.find(s.ext_value) : vmap.end();
    Slot& in_part = parts[p].slots[kv.first] = Slot{vmap.at(s.value), ext == vmap.end() ? -1 : ext->second, s.owner,
                                                    s.ours, false, s.in_graph};
    in_part.handed_on = read_elsewhere[s.value] && static_cast<size_t>(s.value) < held.size() && held[s.value] == kv.first;
  }
  return parts;
}

namespace {

bool backward_has_effects(const Trace& t, const Node& n) {
  const std::string& op = n.op->name;
  if (op == "Custom") return true;
  return t.training && is_batch_norm(op);
}

}  // namespace

uint32_t zero_gradient_inputs(const std::string& op) {
  static const std::unordered_map<std::string, uint32_t> table = [] {
    std::unordered_map<std::string, uint32_t> m;
    const uint32_t all = ~uint32_t{0};
    for (const char* n :
         {"floor", "ceil", "round", "rint", "fix", "trunc", "BlockGrad", "stop_gradient", "zeros_like", "ones_like",
          "_equal", "_not_equal", "_greater", "_greater_equal", "_lesser", "_lesser_equal", "broadcast_equal",
          "broadcast_not_equal", "broadcast_greater", "broadcast_greater_equal", "broadcast_lesser",
          "broadcast_lesser_equal", "_equal_scalar", "_not_equal_scalar", "_greater_scalar", "_greater_equal_scalar",
          "_lesser_scalar", "_lesser_equal_scalar", "_logical_and", "_logical_or", "_logical_xor",
          "broadcast_logical_and", "broadcast_logical_or", "broadcast_logical_xor", "_logical_and_scalar",
          "_logical_or_scalar", "_logical_xor_scalar", "logical_not", "argmax", "argmin", "argsort", "topk",
          "shape_array", "size_array", "one_hot", "_npi_floor", "_npi_ceil", "_npi_rint", "_npi_fix", "_npi_trunc",
          "_npi_around", "_npi_equal", "_npi_not_equal", "_npi_greater", "_npi_greater_equal", "_npi_less",
          "_npi_less_equal", "_npi_equal_scalar", "_npi_not_equal_scalar", "_npi_greater_scalar",
          "_npi_greater_equal_scalar", "_npi_less_scalar", "_npi_less_equal_scalar", "_npi_logical_not",
          "_npi_argmax", "_npi_argmin", "_npi_isnan", "_npi_isinf", "_npi_isfinite", "_npi_isposinf",
          "_npi_isneginf", "_npi_full_like", "_npi_argsort",
          // random draws: a *_like reads only its input's shape, _sample_* their parameters
          "_random_uniform_like", "_random_normal_like", "_random_gamma_like", "_random_exponential_like",
          "_random_poisson_like", "_random_negative_binomial_like", "_random_generalized_negative_binomial_like",
          "_sample_uniform", "_sample_normal", "_sample_gamma", "_sample_exponential", "_sample_poisson",
          "_sample_negative_binomial", "_sample_generalized_negative_binomial"})
      m[n] = all;
    for (const char* n : {"where", "_npi_where"}) m[n] = 1u;  // the condition
    for (const char* n : {"broadcast_like", "_identity_with_attr_like_rhs", "reshape_like"}) m[n] = 2u;  // rhs
    return m;
  }();
  auto it = table.find(op);
  return it == table.end() ? 0 : it->second;
}

void eager_gradient_pass(const Trace& t, const std::vector<int>& heads, std::vector<uint8_t>* value_gradient,
                         std::vector<char>* skipped, bool sums_zero_nodes) {
  std::vector<uint8_t>& g = *value_gradient;
  g.assign(t.values.size(), kNoGradient);
  skipped->assign(t.nodes.size(), 0);
  for (int h : heads) g[h] = kRealGradient;
  for (size_t i = t.nodes.size(); i-- > 0;) {
    const Node& n = t.nodes[i];
    uint8_t s = kNoGradient;
    for (int v : n.out) s = std::max(s, g[v]);
    (*skipped)[i] = s == kZeroNode;
    if (s == kNoGradient) continue;
    for (size_t k = 0; k < n.in.size(); ++k) {
      const bool zero = s == kZeroNode || (k < 32 && (n.op->zero_grad_inputs >> k & 1u));
      uint8_t& got = g[n.in[k]];
      got = zero && sums_zero_nodes && got == kZeroNode ? kRealGradient  // a second zero node: their sum
                                                        : std::max<uint8_t>(got, zero ? kZeroNode : kRealGradient);
    }
  }
}

std::vector<char> parts_hiding_zero_gradients(const Trace& t, const std::vector<int>& part_of_node, int parts,
                                              const std::vector<std::vector<int>>& head_sets,
                                              const std::vector<char>& handed_on, const std::vector<char>& per_op,
                                              bool fuse, std::string* op) {
  std::vector<char> op_by_op(parts, 0);
  if (!t.zero_grad_ops) return op_by_op;
  const size_t N = t.nodes.size(), V = t.values.size();
  const uint8_t kNone = kNoGradient, kZero = kZeroNode, kReal = kRealGradient;
  auto zero_input = [&](const Node& n, size_t k) { return k < 32 && (n.op->zero_grad_inputs >> k & 1u); };
  std::vector<uint8_t> eager(V), graph(V);
  std::vector<char> skipped(N), part_reached(parts);
  // An input the part must hand MXNet's zero node: it has history outside the part.
  auto history_outside = [&](int v, int part) {
    const Value& val = t.values[v];
    if (val.node >= 0) return part_of_node[val.node] != part;
    if (!val.ext) return false;
    int req = 0;
    return autograd_role_or_history(val.ext, &req) == AutogradRole::kHistory;
  };
  auto flag = [&](int part, const Node& n) {
    if (per_op[part]) return;
    if (!op_by_op[part] && op->empty()) *op = n.op->name;
    op_by_op[part] = 1;
  };
  for (const auto& heads : head_sets) {
    // Eager: every op its own node; an op whose output gradients are all zero nodes is skipped.
    eager_gradient_pass(t, heads, &eager, &skipped);
    std::fill(part_reached.begin(), part_reached.end(), 0);
    for (size_t i = 0; i < N; ++i)
      for (int v : t.nodes[i].out)
        if (eager[v] != kNone) part_reached[part_of_node[i]] = 1;
    // Each reached part as one graph: its results arrive with arrays, and nnvm's pass skips
    // inside it as eager does, except for ops in our fused units (their gradient always runs).
    std::fill(graph.begin(), graph.end(), kNone);
    for (size_t v = 0; v < V; ++v)
      if (t.values[v].node >= 0 && handed_on[v] && part_reached[part_of_node[t.values[v].node]]) graph[v] = kReal;
    for (size_t i = N; i-- > 0;) {
      const Node& n = t.nodes[i];
      uint8_t s = kNone;
      for (int v : n.out) s = std::max(s, graph[v]);
      if (s == kNone) continue;
      const bool skips = s == kZero && !(fuse && may_fuse(t, i));
      if (skipped[i] && !skips) flag(part_of_node[i], n);  // eager skips it, its part's backward would not
      for (size_t k = 0; k < n.in.size(); ++k) {
        const int v = n.in[k];
        if (t.values[v].node >= 0 && part_of_node[t.values[v].node] == part_of_node[i] && !handed_on[v])
          graph[v] = std::max<uint8_t>(graph[v], skips || zero_input(n, k) ? kZero : kReal);
      }
    }
    // An input with history that eager's gradient reaches only as zero nodes: its part's
    // backward would hand the ops before it an array instead.
    for (size_t i = 0; i < N; ++i) {
      const Node& n = t.nodes[i];
      if (!part_reached[part_of_node[i]]) continue;
      for (int v : n.in)
        if (eager[v] == kZero && history_outside(v, part_of_node[i])) flag(part_of_node[i], n);
    }
    // An input from outside the part that the part hands only zero nodes (every op of it reading
    // the input gives MXNet's zero node, or is skipped), where the input's gradient is a sum:
    // eager's aggregation drops zero nodes from a sum (AggregateGradient), the part's backward
    // adds a zero-filled array instead, and -0 + 0 is +0 (zero_grad_sweep.py). A sum: another
    // op of the trace gives it a real gradient, or it is a variable or has history (an earlier
    // graph may add to it).
    std::map<uint64_t, std::pair<uint8_t, size_t>> handed;  // (part, value) -> its kind, first reader
    for (size_t i = 0; i < N; ++i) {
      const Node& n = t.nodes[i];
      uint8_t s = kNone;
      for (int v : n.out) s = std::max(s, eager[v]);
      if (s == kNone) continue;
      const int part = part_of_node[i];
      for (size_t k = 0; k < n.in.size(); ++k) {
        const int v = n.in[k];
        if (t.values[v].node >= 0 && part_of_node[t.values[v].node] == part) continue;
        auto it = handed.emplace(static_cast<uint64_t>(part) * V + v, std::make_pair(kNone, i)).first;
        it->second.first = std::max<uint8_t>(it->second.first, s == kZero || zero_input(n, k) ? kZero : kReal);
      }
    }
    for (const auto& h : handed) {
      if (h.second.first != kZero) continue;
      const int part = static_cast<int>(h.first / V), v = static_cast<int>(h.first % V);
      const Value& val = t.values[v];
      bool sum = eager[v] == kReal;
      if (!sum && val.node < 0 && val.ext) {
        int req = 0;
        const AutogradRole role = autograd_role_or_history(val.ext, &req);
        sum = role == AutogradRole::kHistory || (role == AutogradRole::kVariable && req != 0);
      }
      if (sum) flag(part, t.nodes[h.second.second]);
    }
  }
  return op_by_op;
}

std::string backward_could_do_more(const Trace& t, const std::vector<OutputSpec>& heads, bool known_heads,
                                  std::string* op) {
  const size_t words = (heads.size() + 63) / 64;
  if (words == 0) return "";
  // reach[v]: the heads (bits, by position in `heads`) that depend on value v.
  std::vector<uint64_t> reach(t.values.size() * words, 0), node_reach(words);
  for (size_t k = 0; k < heads.size(); ++k) reach[heads[k].value * words + k / 64] |= uint64_t{1} << (k % 64);
  auto falls_short = [&](const uint64_t* bits) {  // a backward would run it where eager's need not
    bool any = false, all = true;
    for (size_t w = 0; w < words; ++w) {
      const size_t left = heads.size() - 64 * w;
      any |= bits[w] != 0;
      all &= bits[w] == (left >= 64 ? ~uint64_t{0} : (uint64_t{1} << left) - 1);
    }
    return known_heads ? !any : !all;
  };
  std::string found;
  for (size_t i = t.nodes.size(); i-- > 0;) {
    const Node& n = t.nodes[i];
    std::fill(node_reach.begin(), node_reach.end(), 0);
    for (int v : n.out)
      for (size_t w = 0; w < words; ++w) node_reach[w] |= reach[v * words + w];
    for (int v : n.in)
      for (size_t w = 0; w < words; ++w) reach[v * words + w] |= node_reach[w];
    if (backward_has_effects(t, n) && falls_short(node_reach.data())) {
      *op = n.op->name;
      found = "its backward has effects, and a backward's heads need not depend on it";
    }
  }
  if (!found.empty() || !autograd_peek_works()) return found;
  for (const Node& n : t.nodes)
    for (int v : n.in) {
      const Value& val = t.values[v];
      if (val.node >= 0 || !val.ext || !falls_short(&reach[v * words])) continue;
      int req = 0;
      const AutogradRole role = autograd_role(val.ext, &req);
      *op = n.op->name;
      if (role == AutogradRole::kHistory) return "reads an input with recorded history a backward's heads need not depend on";
      if (role == AutogradRole::kVariable && req != 0)
        return "reads a variable a backward's heads need not depend on (its gradient would be written)";
    }
  return "";
}

}  // namespace minpy
