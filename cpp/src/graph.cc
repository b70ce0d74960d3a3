#include "graph.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "backward.h"
#include "exact_fc.h"
#include "grad_graph.h"
#include "json.h"
#include "mxapi.h"
#include "runtime.h"
#include "updates.h"

namespace minpy {

namespace {

bool reads(const Node& n, int value) {
  return std::find(n.in.begin(), n.in.end(), value) != n.in.end();
}

}  // namespace

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

namespace {

// Ordering edges (by trace node id) that dataflow does not imply.
std::vector<std::vector<int>> control_edges(const Trace& t, const std::vector<char>& live,
                                            const std::vector<OutputSpec>& outputs) {
  std::vector<std::vector<int>> deps(t.nodes.size());
  auto add = [&](int after, int before) {
    if (after != before && std::find(deps[after].begin(), deps[after].end(), before) == deps[after].end())
      deps[after].push_back(before);
  };
  // A backward node stands for the gradient nodes MXNet's pass adds, which may read any
  // array the nodes before it read (a weight, the data): a write after it (the update of a
  // step left open by backward()) waits for it (graph.cc makes that every gradient node).
  std::vector<char> read_before_backward(t.values.size(), 0);
  if (t.backward >= 0)
    for (int n = 0; n < t.backward; ++n)
      for (int v : t.nodes[n].in) read_before_backward[v] = 1;
  auto reader = [&](size_t r, int value) {
    return reads(t.nodes[r], value) || (static_cast<int>(r) == t.backward && read_before_backward[value]);
  };
  // Writers into an external's memory wait for readers of its old value.
  for (const auto& o : outputs) {
    if (o.target_ext < 0) continue;
    int writer = t.values[o.value].node;
    for (size_t r = 0; r < t.nodes.size(); ++r)
      if (live[r] && reader(r, o.target_ext)) add(writer, static_cast<int>(r));
  }
  // In-place updates of inputs (aux states) keep program order with readers.
  for (size_t m = 0; m < t.nodes.size(); ++m) {
    if (!live[m]) continue;
    for (int ext : t.nodes[m].mutated) {
      for (size_t r = 0; r < t.nodes.size(); ++r) {
        if (r == m || !live[r] || !reader(r, ext)) continue;
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

namespace {

// The order units (single nodes, or fused groups) are emitted in: trace order where
// possible, producers first. A fused unit's members may be far apart in the trace, so
// a consumer of its first member can come before its last one; dataflow decides.
std::vector<int> unit_order(const Trace& t, const std::vector<char>& live, const std::vector<std::vector<int>>& deps,
                            const FusionPlan& plan) {
  const int N = static_cast<int>(t.nodes.size());
  std::vector<std::vector<int>> members(plan.units.size());
  for (int n = 0; n < N; ++n)
    if (plan.unit_of_node[n] >= 0) members[plan.unit_of_node[n]].push_back(n);
  auto unit_of = [&](int n) { return plan.unit_id(n); };
  auto preds = [&](int u) {
    std::vector<int> ps;
    auto add_node = [&](int m) {
      for (int v : t.nodes[m].in)
        if (t.values[v].node >= 0) ps.push_back(unit_of(t.values[v].node));
      for (int d : deps[m])
        if (d >= 0) ps.push_back(unit_of(d));
    };
    if (u < N) add_node(u);
    else
      for (int m : members[u - N]) add_node(m);
    std::sort(ps.begin(), ps.end());
    ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
    ps.erase(std::remove(ps.begin(), ps.end(), u), ps.end());
    return ps;
  };
  std::vector<char> state(N + plan.units.size(), 0);  // 0 new, 1 expanded, 2 emitted
  std::vector<int> order;
  std::vector<std::pair<int, bool>> stack;
  for (int n = 0; n < N; ++n) {
    if (!live[n]) continue;
    stack.push_back({unit_of(n), false});
    while (!stack.empty()) {
      auto [u, expanded] = stack.back();
      stack.pop_back();
      if (state[u] == 2) continue;
      std::vector<int> ps = preds(u);
      if (expanded) {
        for (int p : ps)
          if (state[p] != 2) throw std::logic_error("fusion made the graph cyclic");
        state[u] = 2;
        order.push_back(u);
        continue;
      }
      if (state[u] == 1) throw std::logic_error("fusion made the graph cyclic");
      state[u] = 1;
      stack.push_back({u, true});
      for (auto p = ps.rbegin(); p != ps.rend(); ++p)
        if (state[*p] != 2) stack.push_back({*p, false});
    }
  }
  return order;
}

// The operator a trace node runs as in the graph: its own, except elemwise_add in a graph
// run under autograd (MXNet runs its backward later), which runs as broadcast_add of the
// same shapes (the same sums, and the same gradients: a reduction over no axis copies). A
// static CachedOp's backward fails inside MXNet when an elemwise_add there reads an input
// with recorded history ("storage_type_num_unknown_nodes", storage fallback of a _copy;
// fuzz seed 424555, and a plain HybridBlock hybridized with static_alloc=True, without jit(),
// fails alike); broadcast_add's backward does not.
const char* graph_op_name(const Trace& t, const Node& n) {
  const std::string& op = n.op->name;
  if (!t.runs_recorded() || n.out.size() != 1) return op.c_str();
  if (op != "elemwise_add" && op != "_add" && op != "_plus" && op != "_Plus") return op.c_str();
  for (int v : n.in)
    if (t.values[v].aval != t.values[n.out[0]].aval) return op.c_str();
  return "broadcast_add";
}

// round_ste and sign_ste pass their gradient straight through, and fail alike in a static
// CachedOp's backward when their input has recorded history and their output is the graph's
// (a HybridBlock around round_ste(h) with static_alloc=True fails so without jit()); read
// through _copy (a copy both ways) inside the graph, they do not.
bool read_through_copy(const Trace& t, const Node& n) {
  return t.runs_recorded() && (n.op->name == "_contrib_round_ste" || n.op->name == "_contrib_sign_ste");
}

}  // namespace

LoweredGraph lower(const Trace& t, const std::vector<OutputSpec>& outputs,
                   const std::unordered_set<std::string>& nondifferentiable, bool fuse) {
  LoweredGraph g;
  const bool fc_kernels = fuse && R->cfg.fc_kernels;
  const std::vector<char> gradient_reached = fc_kernels ? gradient_reach(t) : std::vector<char>{};
  std::vector<char> live = live_nodes(t, outputs);
  std::vector<std::vector<int>> deps = control_edges(t, live, outputs);
  const int N = static_cast<int>(t.nodes.size());
  FusionPlan& plan = g.fusion;
  plan.unit_of_node.assign(N, -1);
  if (fuse) {
    std::vector<char> escapes(t.values.size(), 0);
    std::vector<int> written_into(t.values.size(), -1), uses(t.values.size(), 0), head_gradients(t.values.size(), 0);
    for (const auto& o : outputs) {
      escapes[o.value] = 1;
      written_into[o.value] = ++uses[o.value] == 1 ? o.target_ext : -1;
      head_gradients[o.value] += !o.stop_gradient;
    }
    plan = plan_fusion(t, live, deps, escapes, written_into, head_gradients);
  }
  for (int i = 0; i < N; ++i) {
    const int u = plan.unit_of_node[i];
    if (live[i] && reads_back_new_weight(t, t.nodes[i]) && (u < 0 || !plan.units[u].weights_in_place))
      throw MXError(t.nodes[i].op->name + " into its own weight (out=weight), not run by our kernel in place: "
                    "MXNet's kernel reads the new weight back, a graph would read the old one");
  }
  std::vector<int> order;
  try {
    order = unit_order(t, live, deps, plan);
  } catch (const std::logic_error&) {  // a planner bug must cost speed, not correctness
    plan = FusionPlan{{}, std::vector<int>(N, -1)};
    order = unit_order(t, live, deps, plan);
  }

  // A FullyConnected run as _minpy_fc whose product only an Activation(relu) reads: the op
  // applies it (act=relu), one launch and one pass over the product fewer, and in a backward
  // the same for the relu's gradient. Candidates here; taken where the FullyConnected runs as
  // our op and the relu check passes (emitted below).
  auto writes_existing = [](const Node& n) {  // out=: kept as the plain nodes (the simple case only)
    return std::any_of(n.targets.begin(), n.targets.end(), [](NDArrayHandle h) { return h != nullptr; });
  };
  std::vector<int> relu_reading(N, -1);  // FullyConnected node -> the Activation reading it
  std::vector<int> relu_into(N, -1);     // Activation node -> the FullyConnected applying it
  if (fc_kernels && !t.runs_recorded()) {
    std::vector<int> uses(t.values.size(), 0);
    for (int n = 0; n < N; ++n)
      if (live[n])
        for (int v : t.nodes[n].in) ++uses[v];
    for (const auto& o : outputs) uses[o.value] += 2;  // a graph output is read outside too
    for (int a = 0; a < N; ++a) {
      const Node& act = t.nodes[a];
      if (!live[a] || plan.unit_of_node[a] >= 0 || act.op->name != "Activation" || act.in.size() != 1 ||
          act.out.size() != 1 || !act.mutated.empty() || act.attrs.size() != 1 ||
          attr_value(act.attrs, "act_type", "") != "relu" || writes_existing(act))
        continue;
      const int f = t.values[act.in[0]].node;
      if (f < 0 || !live[f] || plan.unit_of_node[f] >= 0 || t.nodes[f].op->name != "FullyConnected" ||
          uses[act.in[0]] != 1 || writes_existing(t.nodes[f]))
        continue;
      bool ordered_alike = true;  // the relu must not wait for anything the product does not
      for (int d : deps[a]) ordered_alike &= d < 0 || d == f || std::count(deps[f].begin(), deps[f].end(), d) > 0;
      if (ordered_alike) relu_reading[f] = a;
    }
  }

  // JSON entry (node id, output index) of every value emitted so far.
  std::vector<std::pair<int, int>> entry(t.values.size(), {-1, 0});
  std::vector<int> json_of_unit(N + plan.units.size(), -1);
  JsonNodes jn;  // the JSON node list being built
  std::string& nodes = jn.nodes;
  std::vector<int>& row_ptr = jn.row_ptr;
  std::vector<int>& arg_nodes = jn.arg_nodes;
  int& next = jn.next;
  bool unproduced = false;  // a reference to a value not emitted yet: an ordering bug, never sent to MXNet
  std::vector<char> in_place_value(t.values.size(), 0);  // written by an in-place update unit
  std::vector<std::pair<int, int>> placeholder_heads;
  std::vector<int> gradient_ends;  // JSON ids of the nodes giving the gradients of a backward node

  auto begin_node = [&](const char* op, const std::string& name) {
    if (next) nodes += ',';
    nodes += "{\"op\":";
    append_json_string(nodes, op);
    nodes += ",\"name\":";
    append_json_string(nodes, name);
  };
  auto end_node = [&](int num_outputs) {
    nodes += '}';
    row_ptr.push_back(row_ptr.back() + num_outputs);
    return next++;
  };
  auto unit_of = [&](int n) { return plan.unit_id(n); };
  auto name_of = [&](int u) { return u >= N ? "f" + std::to_string(u - N) : "n" + std::to_string(u); };

  // CachedOp refuses a graph without inputs (zeros, random draws): give it a dummy one,
  // attached by a control dependency to the first node.
  bool has_input = false;
  for (int n = 0; n < N && !has_input; ++n)
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

  // Under recording, MXNet hands our kernel's backward the caller's request for a graph
  // input's gradient, which may be to add into it (grad_req='add'); lib_api.h does not
  // pass requests on, so such an input whose only reader is a fused unit is read through
  // _copy, whose backward honours them (with two readers MXNet's gradient sum does). Other
  // inputs' gradients are written (autograd's request for a variable with grad_req='write'
  // and for a result with history), and are read directly: the backward then reads the
  // input array as it is when it runs, as eager's does (fuse.cc, saved_for_backward).
  std::vector<int> readers(t.values.size(), 0);
  auto recorded_unit = [&](int u) { return t.recorded_node(u >= N ? plan.units[u - N].members[0] : u); };
  if (t.recording) {
    for (int u : order) {
      if (!recorded_unit(u) && !(u < N && is_backward_node(t.nodes[u]))) continue;  // not the update after it
      const std::vector<int>& in = u >= N ? plan.units[u - N].in : t.nodes[u].in;
      for (int v : in) ++readers[v];
    }
  }

  for (int u : order) {
    const bool fused = u >= N;
    const FusedUnit* fu = fused ? &plan.units[u - N] : nullptr;
    const Node* node = fused ? nullptr : &t.nodes[u];
    const std::vector<int>& in = fused ? fu->in : node->in;
    const std::vector<int>& out = fused ? fu->out : node->out;
    const std::vector<Attr>& attrs = fused ? fu->attrs : node->attrs;
    if (!fused && relu_into[u] >= 0) {  // computed by the _minpy_fc before it
      entry[out[0]] = entry[t.nodes[relu_into[u]].out[0]];
      json_of_unit[u] = json_of_unit[relu_into[u]];
      continue;
    }
    std::vector<int> ctrl;  // JSON ids this unit must follow
    if (dummy >= 0 && g.items.empty()) ctrl.push_back(dummy);
    for (int m : fused ? fu->members : std::vector<int>{u})
      for (int d : deps[m]) {
        if (d < 0 || unit_of(d) == u) continue;
        if (d == t.backward) ctrl.insert(ctrl.end(), gradient_ends.begin(), gradient_ends.end());
        else ctrl.push_back(json_of_unit[unit_of(d)]);
      }
    std::sort(ctrl.begin(), ctrl.end());
    ctrl.erase(std::unique(ctrl.begin(), ctrl.end()), ctrl.end());
    for (int v : in) {  // variables appear just before their first reader
      if (entry[v].first >= 0) continue;
      begin_node("null", "v" + std::to_string(v));
      nodes += ",\"inputs\":[]";
      arg_nodes.push_back(next);
      g.input_values.push_back(v);
      entry[v] = {end_node(1), 0};
    }
    if (!fused && is_backward_node(*node)) {
      // backward() inside the graph (backward.h): MXNet's gradient pass on the graph so far.
      const int nh = std::atoi(attr_value(node->attrs, "num_heads", "0").c_str());
      const std::string mask = attr_value(node->attrs, "head_grads", "");
      std::vector<Entry> ys, ograds, xs;
      size_t given = static_cast<size_t>(nh);
      for (int h = 0; h < nh; ++h) {
        ys.push_back(entry[in[h]]);
        if (h < static_cast<int>(mask.size()) && mask[h] == '1') {
          ograds.push_back(entry[in[given++]]);
          continue;
        }
        begin_node("ones_like", name_of(u) + "_ones" + std::to_string(h));  // MXNet's default head gradient
        nodes += ",\"inputs\":[[" + std::to_string(ys.back().first) + "," + std::to_string(ys.back().second) + ",0]]";
        ograds.push_back({end_node(1), 0});
      }
      for (size_t i = given; i < in.size(); ++i) xs.push_back(entry[in[i]]);
      for (const Entry& e : ys) unproduced |= e.first < 0;
      if (unproduced) break;
      const GradientSplice sp = splice_gradient(&jn, ys, ograds, xs, nondifferentiable);
      auto remap = [&](std::pair<int, int>& e) {
        if (e.first >= 0) e.first = sp.node_map[e.first];
      };
      for (auto& e : entry) remap(e);
      for (auto& e : placeholder_heads) remap(e);
      for (int& j : json_of_unit)
        if (j >= 0) j = sp.node_map[j];
      if (dummy >= 0) dummy = sp.node_map[dummy];
      for (size_t j = 0; j < out.size(); ++j) entry[out[j]] = sp.grads[j];
      json_of_unit[u] = sp.grads.empty() ? -1 : sp.grads[0].first;
      for (const Entry& e : sp.grads) gradient_ends.push_back(e.first);  // every node of the pass precedes one
      g.items.push_back(u);
      g.num_nodes += sp.gradient_nodes;
      g.gradient_nodes += sp.gradient_nodes;
      continue;
    }
    std::vector<std::pair<int, int>> in_entry;
    for (int v : in) in_entry.push_back(entry[v]);
    if (fused && recorded_unit(u) && fu->op == "_minpy_fused_elemwise") {
      for (size_t i = 0; i < in.size(); ++i) {
        if (t.values[in[i]].node >= 0 || !t.values[in[i]].adds_gradient || readers[in[i]] != 1) continue;
        begin_node("_copy", "v" + std::to_string(in[i]) + "_gradcopy");
        nodes += ",\"inputs\":[[" + std::to_string(entry[in[i]].first) + "," + std::to_string(entry[in[i]].second) + ",0]]";
        in_entry[i] = {end_node(1), 0};
      }
    }
    const std::string name = name_of(u);
    // A FullyConnected our kernels compute bit for bit on both cores (exact_fc.h): not where
    // MXNet's autograd records the graph (our backward writes, never adds, its gradients).
    std::vector<Attr> fc_attrs =
        !fused && fc_kernels && !t.runs_recorded() ? fc_kernel_attrs(t, *node, gradient_reached) : std::vector<Attr>{};
    const bool our_fc = !fc_attrs.empty();
    if (our_fc && relu_reading[u] >= 0 && relu_epilogue_exact(t.values[out[0]].aval, t.training)) {
      fc_attrs.push_back({"act", "relu"});
      relu_into[relu_reading[u]] = u;
      g.fc_relu[u] = relu_reading[u];
    }
    begin_node(fused ? fu->op.c_str() : our_fc ? "_minpy_fc" : graph_op_name(t, *node), name);
    const std::vector<Attr>& node_attrs = our_fc ? fc_attrs : attrs;
    nodes += ",\"attrs\":{";
    for (size_t a = 0; a < node_attrs.size(); ++a) {
      if (a) nodes += ',';
      append_json_string(nodes, node_attrs[a].key);
      nodes += ':';
      append_json_string(nodes, node_attrs[a].val);
    }
    nodes += "},\"inputs\":[";
    for (size_t i = 0; i < in.size(); ++i) {
      if (in_entry[i].first < 0) unproduced = true;
      if (i) nodes += ',';
      nodes += "[" + std::to_string(in_entry[i].first) + "," + std::to_string(in_entry[i].second) + ",0]";
    }
    nodes += "]";
    if (!ctrl.empty()) {
      nodes += ",\"control_deps\":[";
      for (size_t d = 0; d < ctrl.size(); ++d) nodes += (d ? "," : "") + std::to_string(ctrl[d]);
      nodes += "]";
    }
    const bool in_place = fused && fu->weights_in_place;
    int id = end_node(in_place ? 1 : static_cast<int>(out.size()));
    json_of_unit[u] = id;
    g.items.push_back(u);
    ++g.num_nodes;
    if (our_fc) g.fc_nodes[u] = fc_attrs;
    if (fused || node->op->ours) {
      ++g.kernel_calls;
      g.kernel_ops += fused ? static_cast<int>(fu->members.size()) : 1;
    }
    // Our kernels and MXNet's optimizer updates have no gradient; CachedOp builds a
    // backward graph anyway, so their outputs go through BlockGrad.
    bool block = fused ? nondifferentiable.count(fu->op) > 0 : nondifferentiable.count(node->op->name) > 0;
    if (in_place) {  // its values are written by mutation; its one output is the placeholder head
      for (int v : out) in_place_value[v] = 1;
      std::pair<int, int> head{id, 0};
      if (block) {
        begin_node("BlockGrad", name + "_nograd0");
        nodes += ",\"inputs\":[[" + std::to_string(id) + ",0,0]]";
        head = {end_node(1), 0};
      }
      placeholder_heads.push_back(head);
      continue;
    }
    for (size_t o = 0; o < out.size(); ++o) {
      if (!block && !fused && read_through_copy(t, *node)) {
        begin_node("_copy", name + "_copy" + std::to_string(o));
        nodes += ",\"inputs\":[[" + std::to_string(id) + "," + std::to_string(o) + ",0]]";
        entry[out[o]] = {end_node(1), 0};
        continue;
      }
      if (!block) {
        entry[out[o]] = {id, static_cast<int>(o)};
        continue;
      }
      begin_node("BlockGrad", name + "_nograd" + std::to_string(o));
      nodes += ",\"inputs\":[[" + std::to_string(id) + "," + std::to_string(o) + ",0]]";
      entry[out[o]] = {end_node(1), 0};
    }
  }

  // What our library ops write in place (see LoweredGraph::ours_mutate).
  std::vector<char> by_ours(t.values.size(), 0);
  for (int u : g.items) {
    const bool fused = u >= N;
    if (!fused && (is_backward_node(t.nodes[u]) || !t.nodes[u].op->ours)) continue;
    for (int m : fused ? plan.units[u - N].members : std::vector<int>{u}) {
      for (int v : t.nodes[m].mutated) g.ours_mutate.push_back(v);
      for (int v : t.nodes[m].out) by_ours[v] = 1;
    }
    if (fused)
      for (int v : plan.units[u - N].out) by_ours[v] = 1;
  }
  for (const auto& fc : g.fc_nodes) {  // MXNet's FullyConnected in the trace, our _minpy_fc in the graph
    for (int v : t.nodes[fc.first].out) by_ours[v] = 1;
    auto relu = g.fc_relu.find(fc.first);
    if (relu != g.fc_relu.end()) by_ours[t.nodes[relu->second].out[0]] = 1;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].target_ext >= 0 && by_ours[outputs[i].value]) g.ours_write_outputs.push_back(static_cast<int>(i));

  g.output_in_place.assign(outputs.size(), 0);
  for (size_t i = 0; i < outputs.size(); ++i) {
    g.output_in_place[i] = in_place_value[outputs[i].value];
    unproduced |= !g.output_in_place[i] && entry[outputs[i].value].first < 0;
  }
  g.placeholders = static_cast<int>(placeholder_heads.size());
  if (unproduced) {
    // MXNet does not check node references in symbol JSON (it would crash): build the graph
    // without fusion, or give up on it (the trace then runs eagerly).
    if (fuse) return lower(t, outputs, nondifferentiable, false);
    throw MXError("lowering referenced a value before producing it");
  }
  // The graph's heads; an output returned through BlockGrad gets that node first (OutputSpec).
  std::vector<std::pair<int, int>> heads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (g.output_in_place[i]) continue;
    if (!outputs[i].stop_gradient) {
      heads.push_back(entry[outputs[i].value]);
      continue;
    }
    const std::pair<int, int> e = entry[outputs[i].value];
    begin_node("BlockGrad", "out" + std::to_string(i) + "_nograd");
    nodes += ",\"inputs\":[[" + std::to_string(e.first) + "," + std::to_string(e.second) + ",0]]";
    heads.push_back({end_node(1), 0});
  }
  std::string& js = g.json;
  js = "{\"nodes\":[" + nodes + "],\"arg_nodes\":[";
  for (size_t i = 0; i < arg_nodes.size(); ++i) js += (i ? "," : "") + std::to_string(arg_nodes[i]);
  js += "],\"node_row_ptr\":[";
  for (size_t i = 0; i < row_ptr.size(); ++i) js += (i ? "," : "") + std::to_string(row_ptr[i]);
  js += "],\"heads\":[";
  heads.insert(heads.end(), placeholder_heads.begin(), placeholder_heads.end());
  for (size_t i = 0; i < heads.size(); ++i)
    js += (i ? ",[" : "[") + std::to_string(heads[i].first) + "," + std::to_string(heads[i].second) + ",0]";
  js += "],\"attrs\":{\"mxnet_version\":[\"int\",10901]}}";
  return g;
}

std::string print_graph(const Trace& recorded, const LoweredGraph& g, const std::vector<OutputSpec>& outputs,
                        const std::function<std::string(int)>& loc_str, const std::string& title) {
  const Trace& t = g.trace ? *g.trace : recorded;
  std::ostringstream os;
  auto aval_str = [](const AVal& a) { return a.shape_str() + " " + dtype_name(a.dtype); };
  auto pad = [](std::string s, size_t w) { return s.size() < w ? s + std::string(w - s.size(), ' ') : s + " "; };
  os << title << "\n";
  for (int v : g.input_values)
    if (v < 0) os << "  " << pad("%dummy = input", 48) << "(1,) float32  (stand-in: the graph has no inputs)\n";
    else os << "  " << pad("%" + std::to_string(v) + " = input", 48) << aval_str(t.values[v].aval) << "\n";
  const int N = static_cast<int>(t.nodes.size());
  auto values_str = [](const std::vector<int>& vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", %" : "%") + std::to_string(vs[i]);
    return s;
  };
  // `our_fc`: the node runs as _minpy_fc with these attributes; `relu`: and applies this
  // Activation node, whose value it gives.
  auto node_line = [&](const Node& node, const std::string& indent, const std::vector<Attr>* our_fc = nullptr,
                       const Node* relu = nullptr) {
    const std::vector<Attr>& attrs = our_fc ? *our_fc : node.attrs;
    std::string rhs = (our_fc ? std::string("_minpy_fc") : node.op->name) + "(";
    for (size_t i = 0; i < node.in.size(); ++i) rhs += (i ? ", %" : "%") + std::to_string(node.in[i]);
    for (size_t a = 0; a < attrs.size(); ++a)
      rhs += ((node.in.empty() && a == 0) ? "" : ", ") + attrs[a].key + "=" + attrs[a].val;
    rhs += ")";
    const std::vector<int>& outs = relu ? relu->out : node.out;
    std::string line = pad(values_str(outs) + " = " + rhs, 48) + aval_str(t.values[outs[0]].aval);
    std::string where = node.loc >= 0 ? loc_str(node.loc) : "";
    if (our_fc)
      where = std::string(relu ? "FullyConnected (%" + std::to_string(node.out[0]) + ", never stored) and its relu"
                               : "FullyConnected") +
              " on every core, MXNet's bits (exact_fc.h)" + (where.empty() ? "" : "; " + where);
    os << indent << (where.empty() ? line : pad(line, 72) + "# " + where) << "\n";
  };
  for (int u : g.items) {
    if (u < N) {
      auto fc = g.fc_nodes.find(u);
      auto relu = g.fc_relu.find(u);
      node_line(t.nodes[u], "  ", fc == g.fc_nodes.end() ? nullptr : &fc->second,
                relu == g.fc_relu.end() ? nullptr : &t.nodes[relu->second]);
      if (is_backward_node(t.nodes[u]))
        os << "  |   the gradients of the first num_heads inputs for the variables among the rest: "
           << g.gradient_nodes << " nodes of MXNet's gradient pass, written into the variables' gradient buffers\n";
      continue;
    }
    // A fused unit: the kernel call, the recorded ops it stands for, and (elementwise) its program.
    const FusedUnit& fu = g.fusion.units[u - N];
    std::string line = pad(values_str(fu.out) + " = " + fu.op + "(" + values_str(fu.in) + ")", 48) +
                       aval_str(t.values[fu.out[0]].aval);
    os << "  " << pad(line, 72) << "# " << fu.summary << "\n";
    for (int m : fu.members) node_line(t.nodes[m], "  |   ");
    for (const auto& a : fu.attrs)
      if (a.key == "program") os << "  |   program: " << a.val << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) {
    os << (i ? ", %" : " %") << outputs[i].value;
    if (outputs[i].target_ext >= 0) os << " -> into %" << outputs[i].target_ext;
    if (i < g.output_in_place.size() && g.output_in_place[i]) os << " (in place)";
  }
  os << "\n";
  return os.str();
}

}  // namespace minpy
