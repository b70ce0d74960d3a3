#include "grad_graph.h"

#include <unordered_map>

#include "exact_fc.h"
#include "json.h"
#include "mxapi.h"
#include "nogil.h"

namespace minpy {

namespace {

// MXNet handles created here, freed whatever happens.
struct Handles {
  std::vector<SymbolHandle> symbols;
  std::vector<GraphHandle> graphs;
  SymbolHandle keep(SymbolHandle s) {
    symbols.push_back(s);
    return s;
  }
  ~Handles() {
    for (auto s : symbols) MXSymbolFree(s);
    for (auto g : graphs) NNGraphFree(g);
  }
};

// A symbol of the given outputs of `f` (heads of f, by position).
SymbolHandle outputs_of(SymbolHandle f, const std::vector<int>& positions, Handles& h) {
  std::vector<SymbolHandle> parts;
  for (int p : positions) {
    SymbolHandle s = nullptr;
    MX_CALL(MXSymbolGetOutput(f, static_cast<uint32_t>(p), &s));
    parts.push_back(h.keep(s));
  }
  SymbolHandle group = nullptr;
  MX_CALL(MXSymbolCreateGroup(static_cast<uint32_t>(parts.size()), parts.data(), &group));
  return h.keep(group);
}

// Outputs of nodes the gradient pass visits from `ys` (through inputs and control
// dependencies) that no visited node reads and that are not ys: entries of the graph `ours`
// (our JSON, node ids as there), with every output the op has, hidden ones included.
std::vector<Entry> unread_outputs(SymbolHandle f, const std::string& ours, const std::vector<Entry>& ys) {
  const char* mx_json = nullptr;
  MX_CALL(MXSymbolSaveToJSON(f, &mx_json));  // MXNet's view: true output counts, its node order
  JValue theirs, mine;
  try {
    theirs = parse_json(mx_json);
    mine = parse_json(ours);
  } catch (const std::exception& e) {
    throw MXError(e.what());
  }
  const JValue& tn = *theirs.get("nodes");
  const JValue& trp = *theirs.get("node_row_ptr");
  const JValue& mn = *mine.get("nodes");
  std::unordered_map<std::string, int> our_id;
  for (size_t i = 0; i < mn.arr.size(); ++i) our_id[mn.arr[i].get("name")->str] = static_cast<int>(i);
  std::vector<int> their_of(mn.arr.size(), -1);
  for (size_t i = 0; i < tn.arr.size(); ++i) {
    auto it = our_id.find(tn.arr[i].get("name")->str);
    if (it == our_id.end()) throw MXError("the graph came back from MXNet with a node renamed");
    their_of[it->second] = static_cast<int>(i);
  }
  const size_t n = tn.arr.size();
  std::vector<char> visited(n, 0);
  std::vector<std::vector<char>> read(n);
  for (size_t i = 0; i < n; ++i) read[i].assign(trp.arr[i + 1].as_int() - trp.arr[i].as_int(), 0);
  std::vector<int> stack;
  for (const Entry& y : ys) {
    const int t = their_of[y.first];
    read[t][y.second] = 1;
    stack.push_back(t);
  }
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (visited[i]) continue;
    visited[i] = 1;
    if (const JValue* in = tn.arr[i].get("inputs"))
      for (const JValue& e : in->arr) {
        read[e.arr[0].as_int()][e.arr[1].as_int()] = 1;
        stack.push_back(e.arr[0].as_int());
      }
    if (const JValue* ctrl = tn.arr[i].get("control_deps"))
      for (const JValue& c : ctrl->arr) stack.push_back(c.as_int());
  }
  std::vector<Entry> unread;
  for (size_t m = 0; m < mn.arr.size(); ++m) {
    const int t = their_of[m];
    if (t < 0 || !visited[t] || tn.arr[t].get("op")->str == "null") continue;
    for (size_t k = 0; k < read[t].size(); ++k)
      if (!read[t][k]) unread.push_back({static_cast<int>(m), static_cast<int>(k)});
  }
  return unread;
}

// The node list without its control dependencies, which go to `ctrl` (per node, in order).
std::string without_control_deps(const std::string& nodes, int num_nodes, std::vector<std::vector<int>>* ctrl) {
  ctrl->assign(num_nodes, {});
  JValue parsed;
  try {
    parsed = parse_json("[" + nodes + "]");
  } catch (const std::exception& e) {
    throw MXError(e.what());
  }
  if (parsed.arr.size() != static_cast<size_t>(num_nodes)) throw MXError("graph nodes miscounted");
  for (int i = 0; i < num_nodes; ++i)
    if (const JValue* c = parsed.arr[i].get("control_deps"))
      for (const JValue& d : c->arr) (*ctrl)[i].push_back(d.as_int());
  // Inside a JSON string a quote is escaped, so this key is found only where it is a key.
  const std::string key = ",\"control_deps\":[";
  std::string out;
  size_t from = 0;
  for (size_t at; (at = nodes.find(key, from)) != std::string::npos; from = nodes.find(']', at + key.size()) + 1)
    out.append(nodes, from, at - from);
  out.append(nodes, from, std::string::npos);
  return out;
}

}  // namespace

GradientSplice splice_gradient(JsonNodes* g, const std::vector<Entry>& ys, const std::vector<Entry>& ograds,
                               const std::vector<Entry>& xs, const std::unordered_set<std::string>& nondiff) {
  Handles h;
  // F: the graph so far, every output of every node a head, so that each node is in it and
  // the entry (node, k) is head row_ptr[node] + k.
  const int n_old = g->next;
  const int n_heads = g->row_ptr.back();
  // The pass follows control dependencies as it follows data: a node ordered before a head only
  // by them (an earlier BatchNorm sharing its running statistics, an earlier random draw) would
  // get a backward node, which eager's autograd never runs (BatchNorm's updates the running
  // statistics again: fuzz seed 6541). The pass sees data edges only; the order comes back below.
  std::vector<std::vector<int>> old_ctrl;
  const std::string data_edges = without_control_deps(g->nodes, n_old, &old_ctrl);
  std::string js = "{\"nodes\":[" + data_edges + "],\"arg_nodes\":[";
  for (size_t i = 0; i < g->arg_nodes.size(); ++i) js += (i ? "," : "") + std::to_string(g->arg_nodes[i]);
  js += "],\"node_row_ptr\":[";
  for (size_t i = 0; i < g->row_ptr.size(); ++i) js += (i ? "," : "") + std::to_string(g->row_ptr[i]);
  js += "],\"heads\":[";
  for (int n = 0; n < n_old; ++n)
    for (int k = 0; k < g->row_ptr[n + 1] - g->row_ptr[n]; ++k)
      js += std::string(n || k ? ",[" : "[") + std::to_string(n) + "," + std::to_string(k) + ",0]";
  js += "],\"attrs\":{\"mxnet_version\":[\"int\",10901]}}";
  SymbolHandle f = nullptr;
  MX_CALL(without_gil([&] { return MXSymbolCreateFromJSON(js.c_str(), &f); }));
  h.keep(f);
  auto positions = [&](const std::vector<Entry>& es) {
    std::vector<int> p;
    for (const Entry& e : es) p.push_back(g->row_ptr[e.first] + e.second);
    return p;
  };
  std::vector<int> y_pos = positions(ys), og_pos = positions(ograds);

  // The pass sums the gradients reaching every output of every node it visits; an output no
  // visited node reads gets an empty sum, which its default aggregation makes a `zeros` node
  // MXNet 1.9.1 does not have (a hidden output: Dropout's mask, BatchNorm's mean). Such
  // outputs become heads too, with zeros_like as their head gradient (what autograd's own
  // aggregation gives them: zeros).
  const std::vector<Entry> unread = unread_outputs(f, js, ys);
  if (!unread.empty()) {
    std::string extra_nodes, extra_heads;
    int next = n_old;
    for (const Entry& e : unread) {
      extra_nodes += ",{\"op\":\"zeros_like\",\"name\":\"zero_head_grad" + std::to_string(next) + "\",\"inputs\":[[" +
                     std::to_string(e.first) + "," + std::to_string(e.second) + ",0]]}";
      extra_heads += ",[" + std::to_string(e.first) + "," + std::to_string(e.second) + ",0]";
      ++next;
    }
    for (int z = n_old; z < next; ++z) extra_heads += ",[" + std::to_string(z) + ",0,0]";
    std::string js2 = js, extra_rows;
    for (int z = n_old; z < next; ++z) extra_rows += "," + std::to_string(n_heads + (z - n_old) + 1);
    const size_t nodes_end = js2.find("],\"arg_nodes\"");
    js2.insert(nodes_end, extra_nodes);
    js2.insert(js2.find("],\"heads\""), extra_rows);
    const size_t heads_end = js2.find("],\"attrs\":{\"mxnet_version\"");
    js2.insert(heads_end, extra_heads);
    SymbolHandle f2 = nullptr;
    MX_CALL(without_gil([&] { return MXSymbolCreateFromJSON(js2.c_str(), &f2); }));
    f = h.keep(f2);
    for (size_t i = 0; i < unread.size(); ++i) {
      y_pos.push_back(n_heads + static_cast<int>(i));
      og_pos.push_back(n_heads + static_cast<int>(unread.size() + i));
    }
  }
  const int f_heads = n_heads + 2 * static_cast<int>(unread.size());

  // MXNet's gradient pass, as autograd runs it: gradients of ys, weighted by ograds, for xs.
  GraphHandle graph = nullptr, with_grad = nullptr;
  MX_CALL(NNGraphCreate(f, &graph));
  h.graphs.push_back(graph);
  MX_CALL(NNGraphSetNodeEntryListAttr_(graph, "grad_ys", outputs_of(f, y_pos, h)));
  MX_CALL(NNGraphSetNodeEntryListAttr_(graph, "grad_xs", outputs_of(f, positions(xs), h)));
  MX_CALL(NNGraphSetNodeEntryListAttr_(graph, "grad_ys_out_grad", outputs_of(f, og_pos, h)));
  const char* pass[] = {"MXGradient"};
  MX_CALL(NNGraphApplyPasses(graph, 1, pass, &with_grad));
  h.graphs.push_back(with_grad);
  SymbolHandle grads = nullptr;
  MX_CALL(NNGraphGetSymbol(with_grad, &grads));
  h.keep(grads);
  SymbolHandle both[] = {f, grads}, combined = nullptr;
  MX_CALL(MXSymbolCreateGroup(2, both, &combined));
  h.keep(combined);
  const char* out_json = nullptr;
  MX_CALL(MXSymbolSaveToJSON(combined, &out_json));
  JValue parsed;
  try {
    parsed = parse_json(out_json);
  } catch (const std::exception& e) {
    throw MXError(e.what());
  }
  const JValue* nodes = parsed.get("nodes");
  const JValue* heads = parsed.get("heads");
  const JValue* row_ptr = parsed.get("node_row_ptr");
  if (!nodes || !heads || !row_ptr || heads->arr.size() != static_cast<size_t>(f_heads) + xs.size())
    throw MXError("the gradient pass returned an unexpected graph");
  const size_t n = nodes->arr.size();

  // Which parsed nodes were ours before (every one is a head of F), which the pass added.
  GradientSplice out;
  std::vector<int> old_of(n, -1);
  out.node_map.assign(n_old, -1);
  for (int node = 0; node < n_old; ++node) {
    const int p = heads->arr[g->row_ptr[node]].arr[0].as_int();
    old_of[p] = node;
  }

  // Which outputs something reads (an input or a head of the result).
  std::vector<std::vector<char>> consumed(n);
  for (size_t i = 0; i < n; ++i)
    consumed[i].assign(row_ptr->arr[i + 1].as_int() - row_ptr->arr[i].as_int(), 0);
  auto mark = [&](const JValue& e) { consumed[e.arr[0].as_int()][e.arr[1].as_int()] = 1; };
  for (const JValue& nd : nodes->arr)
    if (const JValue* inputs = nd.get("inputs"))
      for (const JValue& e : inputs->arr) mark(e);
  for (size_t j = 0; j < xs.size(); ++j) mark(heads->arr[f_heads + j]);

  // Re-serialise in MXNet's (topological) order. Every output of an added node without a
  // gradient goes through BlockGrad: CachedOp differentiates the whole graph, and such a
  // node passes only if all its outputs' gradients are zeros -- BlockGrad's are. An output
  // nothing reads would get a gradient CachedOp does not know as zero, so its BlockGrad is
  // kept in the graph as a control dependency of the BlockGrad of a read output.
  JsonNodes result;
  std::vector<std::vector<Entry>> entry_of(n);  // parsed (node, k) -> entry in `result`
  std::vector<int> id_of(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const JValue& nd = nodes->arr[i];
    const JValue* op = nd.get("op");
    const JValue* name = nd.get("name");
    const JValue* attrs = nd.get("attrs");
    const JValue* inputs = nd.get("inputs");
    const JValue* ctrl = nd.get("control_deps");
    const int num_out = row_ptr->arr[i + 1].as_int() - row_ptr->arr[i].as_int();
    // MXNet's own aggregation (AggregateGradient: autograd's and CachedOp's) drops zero nodes from
    // a sum of gradients, keeping at least one; the pass's default one, run here, sums them, and
    // -0 + 0 is +0 where eager keeps -0 (zero_grad_sweep.py). The sums the pass made lose them alike.
    std::vector<const JValue*> summed;
    const bool pass_sum = old_of[i] < 0 && op && op->str == "elemwise_sum" && inputs && inputs->arr.size() > 1;
    if (pass_sum) {
      for (const JValue& e : inputs->arr) {
        const JValue* from = nodes->arr[e.arr[0].as_int()].get("op");
        if (!from || (from->str != "zeros_like" && from->str != "_zeros" && from->str != "zeros")) summed.push_back(&e);
      }
      if (summed.empty()) summed.push_back(&inputs->arr[0]);
      if (summed.size() == 1) {  // the one gradient left is the sum
        const JValue& e = *summed[0];
        entry_of[i].push_back(entry_of[e.arr[0].as_int()][e.arr[1].as_int()]);
        id_of[i] = entry_of[i][0].first;
        continue;
      }
    }
    std::vector<size_t> own_inputs;  // the pass's inputs our op for its node reads
    const JValue* act = attrs ? attrs->get("act") : nullptr;
    const char* own =
        op ? own_gradient_op(op->str, act ? act->str : "", inputs ? inputs->arr.size() : 0, &own_inputs) : nullptr;
    const std::string op_name = own ? own : op ? op->str : "null";
    std::string s = std::string(result.next ? "," : "") + "{\"op\":";
    append_json_string(s, op_name);
    s += ",\"name\":";
    append_json_string(s, name ? name->str : "");
    if (attrs && !attrs->obj.empty()) {
      s += ",\"attrs\":{";
      for (size_t a = 0; a < attrs->obj.size(); ++a) {
        if (a) s += ',';
        append_json_string(s, attrs->obj[a].first);
        s += ':';
        const bool count = pass_sum && attrs->obj[a].first == "num_args";
        append_json_string(s, count ? std::to_string(summed.size()) : attrs->obj[a].second.str);
      }
      s += "}";
    }
    s += ",\"inputs\":[";
    if (inputs && !pass_sum) {
      if (own) {
        for (size_t k : own_inputs) summed.push_back(&inputs->arr[k]);
      } else {
        for (const JValue& e : inputs->arr) summed.push_back(&e);
      }
    }
    for (size_t k = 0; k < summed.size(); ++k) {
      const JValue& e = *summed[k];
      const Entry src = entry_of[e.arr[0].as_int()][e.arr[1].as_int()];
      s += std::string(k ? ",[" : "[") + std::to_string(src.first) + "," + std::to_string(src.second) + ",0]";
    }
    s += "]";
    if (old_of[i] >= 0 && !old_ctrl[old_of[i]].empty()) {  // ours: the order we gave it
      const std::vector<int>& deps = old_ctrl[old_of[i]];
      s += ",\"control_deps\":[";
      for (size_t k = 0; k < deps.size(); ++k) {
        const int dep = out.node_map[deps[k]];
        if (dep < 0) throw MXError("the gradient pass reordered the graph");
        s += (k ? "," : "") + std::to_string(dep);
      }
      s += "]";
    } else if (ctrl && !ctrl->arr.empty()) {
      s += ",\"control_deps\":[";
      for (size_t k = 0; k < ctrl->arr.size(); ++k) s += (k ? "," : "") + std::to_string(id_of[ctrl->arr[k].as_int()]);
      s += "]";
    }
    s += "}";
    result.nodes += s;
    const int id = result.next++;
    result.row_ptr.push_back(result.row_ptr.back() + num_out);
    id_of[i] = id;
    const bool variable = op_name == "null";
    if (variable) result.arg_nodes.push_back(id);
    if (old_of[i] >= 0) out.node_map[old_of[i]] = id;
    else if (!variable) ++out.gradient_nodes;
    for (int k = 0; k < num_out; ++k) entry_of[i].push_back({id, k});
    if (old_of[i] < 0 && !variable && nondiff.count(op_name)) {
      std::vector<int> unread;
      for (int pass = 0; pass < 2; ++pass)  // the unread outputs' BlockGrads first
        for (int k = 0; k < num_out; ++k) {
          if (consumed[i][k] == (pass == 0)) continue;
          result.nodes += ",{\"op\":\"BlockGrad\",\"name\":";
          append_json_string(result.nodes, (name ? name->str : "g") + "_nograd" + std::to_string(k));
          result.nodes += ",\"inputs\":[[" + std::to_string(id) + "," + std::to_string(k) + ",0]]";
          if (pass == 1 && !unread.empty()) {
            result.nodes += ",\"control_deps\":[";
            for (size_t u = 0; u < unread.size(); ++u) result.nodes += (u ? "," : "") + std::to_string(unread[u]);
            result.nodes += "]";
            unread.clear();
          }
          result.nodes += "}";
          if (pass == 0) unread.push_back(result.next);
          entry_of[i][k] = {result.next++, 0};
          result.row_ptr.push_back(result.row_ptr.back() + 1);
        }
    }
  }
  for (size_t j = 0; j < xs.size(); ++j) {
    const JValue& e = heads->arr[f_heads + j];
    out.grads.push_back(entry_of[e.arr[0].as_int()][e.arr[1].as_int()]);
  }
  *g = std::move(result);
  return out;
}

}  // namespace minpy
