#include "graph.h"

#include <algorithm>
#include <sstream>

namespace minpy {

namespace {

void json_str(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
}

bool reads(const Node& n, int value) {
  return std::find(n.in.begin(), n.in.end(), value) != n.in.end();
}

// Which trace nodes the outputs depend on.
std::vector<char> live_nodes(const Trace& t, const std::vector<OutputSpec>& outputs) {
  std::vector<char> live(t.nodes.size(), 0);
  std::vector<int> stack;
  for (const auto& o : outputs)
    if (t.values[o.value].node >= 0) stack.push_back(t.values[o.value].node);
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (live[n]) continue;
    live[n] = 1;
    for (int v : t.nodes[n].in)
      if (t.values[v].node >= 0 && !live[t.values[v].node]) stack.push_back(t.values[v].node);
  }
  return live;
}

// Ordering edges (by trace node id) that dataflow does not imply.
std::vector<std::vector<int>> control_edges(const Trace& t, const std::vector<char>& live,
                                            const std::vector<OutputSpec>& outputs) {
  std::vector<std::vector<int>> deps(t.nodes.size());
  auto add = [&](int after, int before) {
    if (after != before && std::find(deps[after].begin(), deps[after].end(), before) == deps[after].end())
      deps[after].push_back(before);
  };
  // Writers into an external's memory wait for readers of its old value.
  for (const auto& o : outputs) {
    if (o.target_ext < 0) continue;
    int writer = t.values[o.value].node;
    for (size_t r = 0; r < t.nodes.size(); ++r)
      if (live[r] && reads(t.nodes[r], o.target_ext)) add(writer, static_cast<int>(r));
  }
  // In-place updates of inputs (aux states) keep program order with readers.
  for (size_t m = 0; m < t.nodes.size(); ++m) {
    if (!live[m]) continue;
    for (int ext : t.nodes[m].mutated) {
      for (size_t r = 0; r < t.nodes.size(); ++r) {
        if (r == m || !live[r] || !reads(t.nodes[r], ext)) continue;
        if (r < m) add(static_cast<int>(m), static_cast<int>(r));
        else add(static_cast<int>(r), static_cast<int>(m));
      }
    }
  }
  // Random draws in program order.
  int prev_random = -1;
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (!live[n] || !t.nodes[n].op->effectful) continue;
    if (prev_random >= 0) add(static_cast<int>(n), prev_random);
    prev_random = static_cast<int>(n);
  }
  return deps;
}

}  // namespace

LoweredGraph lower(const Trace& t, const std::vector<OutputSpec>& outputs,
                   const std::unordered_set<std::string>& nondifferentiable) {
  LoweredGraph g;
  std::vector<char> live = live_nodes(t, outputs);
  std::vector<std::vector<int>> deps = control_edges(t, live, outputs);

  // JSON entry (node id, output index) of every value emitted so far.
  std::vector<std::pair<int, int>> entry(t.values.size(), {-1, 0});
  std::vector<int> json_of_node(t.nodes.size(), -1);
  std::vector<int> row_ptr{0};
  std::vector<int> arg_nodes;
  std::string nodes;
  int next = 0;

  auto begin_node = [&](const char* op, const std::string& name) {
    if (next) nodes += ',';
    nodes += "{\"op\":";
    json_str(nodes, op);
    nodes += ",\"name\":";
    json_str(nodes, name);
  };
  auto end_node = [&](int num_outputs) {
    nodes += '}';
    row_ptr.push_back(row_ptr.back() + num_outputs);
    return next++;
  };

  // CachedOp refuses a graph without inputs (zeros, random draws): give it a dummy one,
  // attached by a control dependency to the first node.
  bool has_input = false;
  for (size_t n = 0; n < t.nodes.size() && !has_input; ++n)
    if (live[n])
      for (int v : t.nodes[n].in) has_input |= t.values[v].node < 0;
  int dummy = -1;
  if (!has_input) {
    begin_node("null", "v-1");
    nodes += ",\"inputs\":[]";
    arg_nodes.push_back(next);
    g.input_values.push_back(-1);
    dummy = end_node(1);
  }

  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (!live[n]) continue;
    const Node& node = t.nodes[n];
    if (dummy >= 0 && g.kept_nodes.empty()) deps[n].push_back(-1);
    for (int v : node.in) {  // variables appear just before their first reader
      if (entry[v].first >= 0) continue;
      begin_node("null", "v" + std::to_string(v));
      nodes += ",\"inputs\":[]";
      arg_nodes.push_back(next);
      g.input_values.push_back(v);
      entry[v] = {end_node(1), 0};
    }
    begin_node(node.op->name.c_str(), "n" + std::to_string(n));
    nodes += ",\"attrs\":{";
    for (size_t a = 0; a < node.attrs.size(); ++a) {
      if (a) nodes += ',';
      json_str(nodes, node.attrs[a].key);
      nodes += ':';
      json_str(nodes, node.attrs[a].val);
    }
    nodes += "},\"inputs\":[";
    for (size_t i = 0; i < node.in.size(); ++i) {
      if (i) nodes += ',';
      nodes += "[" + std::to_string(entry[node.in[i]].first) + "," + std::to_string(entry[node.in[i]].second) + ",0]";
    }
    nodes += "]";
    if (!deps[n].empty()) {
      nodes += ",\"control_deps\":[";
      for (size_t d = 0; d < deps[n].size(); ++d) {
        if (d) nodes += ',';
        nodes += std::to_string(deps[n][d] < 0 ? dummy : json_of_node[deps[n][d]]);
      }
      nodes += "]";
    }
    int id = end_node(static_cast<int>(node.out.size()));
    json_of_node[n] = id;
    g.kept_nodes.push_back(static_cast<int>(n));
    ++g.num_nodes;
    bool block = nondifferentiable.count(node.op->name) > 0;
    for (size_t o = 0; o < node.out.size(); ++o) {
      if (!block) {
        entry[node.out[o]] = {id, static_cast<int>(o)};
        continue;
      }
      begin_node("BlockGrad", "n" + std::to_string(n) + "_nograd" + std::to_string(o));
      nodes += ",\"inputs\":[[" + std::to_string(id) + "," + std::to_string(o) + ",0]]";
      entry[node.out[o]] = {end_node(1), 0};
    }
  }

  std::string& js = g.json;
  js = "{\"nodes\":[" + nodes + "],\"arg_nodes\":[";
  for (size_t i = 0; i < arg_nodes.size(); ++i) js += (i ? "," : "") + std::to_string(arg_nodes[i]);
  js += "],\"node_row_ptr\":[";
  for (size_t i = 0; i < row_ptr.size(); ++i) js += (i ? "," : "") + std::to_string(row_ptr[i]);
  js += "],\"heads\":[";
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& e = entry[outputs[i].value];
    js += (i ? ",[" : "[") + std::to_string(e.first) + "," + std::to_string(e.second) + ",0]";
  }
  js += "],\"attrs\":{\"mxnet_version\":[\"int\",10901]}}";
  return g;
}

std::string print_graph(const Trace& t, const LoweredGraph& g, const std::vector<OutputSpec>& outputs,
                        const std::function<std::string(int)>& loc_str, const std::string& title) {
  std::ostringstream os;
  auto aval_str = [](const AVal& a) { return a.shape_str() + " " + dtype_name(a.dtype); };
  auto pad = [](std::string s, size_t w) { return s.size() < w ? s + std::string(w - s.size(), ' ') : s + " "; };
  os << title << "\n";
  for (int v : g.input_values)
    if (v < 0) os << "  " << pad("%dummy = input", 48) << "(1,) float32  (stand-in: the graph has no inputs)\n";
    else os << "  " << pad("%" + std::to_string(v) + " = input", 48) << aval_str(t.values[v].aval) << "\n";
  for (int n : g.kept_nodes) {
    const Node& node = t.nodes[n];
    std::string lhs;
    for (size_t o = 0; o < node.out.size(); ++o) lhs += (o ? ", %" : "%") + std::to_string(node.out[o]);
    std::string rhs = node.op->name + "(";
    for (size_t i = 0; i < node.in.size(); ++i) rhs += (i ? ", %" : "%") + std::to_string(node.in[i]);
    for (size_t a = 0; a < node.attrs.size(); ++a)
      rhs += ((node.in.empty() && a == 0) ? "" : ", ") + node.attrs[a].key + "=" + node.attrs[a].val;
    rhs += ")";
    std::string line = pad(lhs + " = " + rhs, 48) + aval_str(t.values[node.out[0]].aval);
    std::string where = node.loc >= 0 ? loc_str(node.loc) : "";
    os << "  " << (where.empty() ? line : pad(line, 72) + "# " + where) << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) {
    os << (i ? ", %" : " %") << outputs[i].value;
    if (outputs[i].target_ext >= 0) os << " -> into %" << outputs[i].target_ext;
  }
  os << "\n";
  return os.str();
}

}  // namespace minpy
