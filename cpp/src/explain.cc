#include "explain.h"

#include <algorithm>

#include "executor.h"

namespace minpy {

std::vector<Step> steps_of(const Trace& t) {
  std::vector<Step> steps;
  size_t next_node = 0;
  for (size_t v = 0; v < t.values.size(); ++v) {
    const Value& val = t.values[v];
    if (val.node < 0) {
      Step s;
      s.is_input = true;
      s.aval = val.aval;
      s.value = static_cast<int>(v);
      steps.push_back(s);
    } else if (val.index == 0 && static_cast<size_t>(val.node) == next_node) {
      const Node& n = t.nodes[next_node++];
      Step s;
      s.op = n.op->name;
      s.attrs = n.attrs;
      s.in = n.in;
      s.aval = val.aval;
      s.loc = n.loc;
      s.value = static_cast<int>(v);
      s.nout = static_cast<int>(n.out.size());
      steps.push_back(std::move(s));
    }
  }
  return steps;
}

namespace {

std::string attr_diff(const Step& a, const Step& b) {
  std::string out;
  for (const auto& x : a.attrs) {
    auto it = std::find_if(b.attrs.begin(), b.attrs.end(), [&](const Attr& y) { return y.key == x.key; });
    std::string old = it == b.attrs.end() ? "(unset)" : it->val;
    if (old != x.val) out += (out.empty() ? "" : ", ") + x.key + " " + old + " -> " + x.val;
  }
  for (const auto& y : b.attrs) {
    bool present = std::any_of(a.attrs.begin(), a.attrs.end(), [&](const Attr& x) { return x.key == y.key; });
    if (!present) out += (out.empty() ? "" : ", ") + y.key + " " + y.val + " -> (unset)";
  }
  return out;
}

std::string aval_diff(const AVal& now, const AVal& before) {
  if (now.ndim != before.ndim || !std::equal(now.dims, now.dims + now.ndim, before.dims))
    return "shape " + before.shape_str() + " -> " + now.shape_str();
  if (now.dtype != before.dtype) return std::string("dtype ") + dtype_name(before.dtype) + " -> " + dtype_name(now.dtype);
  if (now.dev_type != before.dev_type || now.dev_id != before.dev_id)
    return "context " + ctx_str(before.dev_type, before.dev_id) + " -> " + ctx_str(now.dev_type, now.dev_id);
  return "";
}

}  // namespace

std::string nearest_difference(const Trace& t, const std::vector<OutputSpec>& outputs,
                               const std::vector<std::shared_ptr<Executor>>& cached,
                               const std::function<std::string(int)>& loc_str) {
  if (cached.empty()) return "first compile (cache empty)";
  std::vector<Step> now = steps_of(t);
  const Executor* best = nullptr;
  size_t best_common = 0;
  for (const auto& e : cached) {
    size_t n = std::min(now.size(), e->steps.size()), i = 0;
    while (i < n && now[i].is_input == e->steps[i].is_input && now[i].op == e->steps[i].op &&
           now[i].in == e->steps[i].in && now[i].aval == e->steps[i].aval && now[i].attrs == e->steps[i].attrs)
      ++i;
    if (!best || i > best_common) {
      best = e.get();
      best_common = i;
    }
  }
  const auto& old = best->steps;
  size_t i = best_common;
  auto op_index = [&](size_t step) {
    int k = 0;
    for (size_t s = 0; s < step; ++s) k += now[s].is_input ? 0 : 1;
    return k;
  };
  auto where = [&](const Step& s) {
    std::string w = s.loc >= 0 ? loc_str(s.loc) : "";
    return w.empty() ? std::string() : ", recorded at " + w;
  };
  if (i < now.size() && i < old.size()) {
    const Step& a = now[i];
    const Step& b = old[i];
    if (a.is_input && b.is_input) return "input %" + std::to_string(a.value) + " " + aval_diff(a.aval, b.aval);
    if (!a.is_input && !b.is_input && a.op == b.op) {
      std::string d = attr_diff(a, b);
      if (!d.empty()) return "op " + std::to_string(op_index(i)) + " " + a.op + " " + d + where(a);
      if (a.in != b.in) return "op " + std::to_string(op_index(i)) + " " + a.op + " reads different values" + where(a);
      return "op " + std::to_string(op_index(i)) + " " + a.op + " output " + aval_diff(a.aval, b.aval) + where(a);
    }
    auto name = [](const Step& s) { return s.is_input ? std::string("new input") : s.op; };
    return "sequence diverged at op " + std::to_string(op_index(i)) + ": " + name(a) + " vs " + name(b) + where(a);
  }
  if (now.size() != old.size())
    return "sequence length " + std::to_string(old.size()) + " -> " + std::to_string(now.size()) + " steps" +
           (i < now.size() ? where(now[i]) : std::string());
  if (t.recording != best->recording || t.training != best->training)
    return std::string("autograd state recording=") + (t.recording ? "1" : "0") + " training=" +
           (t.training ? "1" : "0");
  std::vector<std::pair<int, int>> outs;
  for (const auto& o : outputs) outs.emplace_back(o.value, o.target_ext);
  if (outs != best->outputs)
    return "live outputs " + std::to_string(best->outputs.size()) + " -> " + std::to_string(outs.size()) +
           " (a different set of arrays is still referenced at the flush)";
  return "same sequence under a different key (shape semantics changed)";
}

}  // namespace minpy
