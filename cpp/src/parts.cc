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
#include <numeric>
#include <unordered_map>

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

std::vector<Trace> independent_parts(const Trace& t, const std::vector<NDArrayHandle>& held) {
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
        if (val.node >= 0 && !from_here) part.values[in.back()].earlier_part = true;
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
  // Arrays holding a result: in the part that computes it (the parent trace keeps the references).
  for (const auto& kv : t.slots) {
    const Slot& s = kv.second;
    const int p = part_of_value[s.value];
    if (p < 0) continue;
    const auto& vmap = value_map[p];
    auto ext = s.ext_value >= 0 ? vmap.find(s.ext_value) : vmap.end();
    parts[p].slots[kv.first] = Slot{vmap.at(s.value), ext == vmap.end() ? -1 : ext->second, s.owner, s.ours, false,
                                    s.in_graph};
  }
  return parts;
}

namespace {

bool backward_has_effects(const Trace& t, const Node& n) {
  const std::string& op = n.op->name;
  if (op == "Custom") return true;
  return t.training && (op == "BatchNorm" || op == "BatchNorm_v1" || op == "_contrib_SyncBatchNorm");
}

}  // namespace

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
