// Plans of graphs made only of our fused kernels: see kernel_launch.h (the launch itself is
// kernel_job.cc).
#include "kernel_launch.h"

#include <algorithm>
#include <cstdlib>

#include "json.h"
#include "runtime.h"

namespace minpy {

namespace {

// The kernel library's entry points (cpp/kernels/fused_elemwise.cc).
using ProgramCreate = void* (*)(int num_attrs, const char* const* keys, const char* const* vals);
using ProgramFree = void (*)(void* program);

struct Entries {
  ProgramCreate create = nullptr;
  ProgramFree free = nullptr;
  FusedProgramRun run = nullptr;
};

// Null if the library or an entry point is missing; looked up until found, then kept (MXNet
// never unloads the library). GIL held.
const Entries* entries() {
  static Entries e;
  if (!e.create || !e.free || !e.run) {
    e.create = reinterpret_cast<ProgramCreate>(kernel_symbol("minpy_fused_program_create"));
    e.free = reinterpret_cast<ProgramFree>(kernel_symbol("minpy_fused_program_free"));
    e.run = reinterpret_cast<FusedProgramRun>(kernel_symbol("minpy_fused_program_run"));
  }
  return e.create && e.free && e.run ? &e : nullptr;
}

}  // namespace

namespace {

int64_t shape_elems(const std::string& shape) {  // "(2, 3)" -> 6
  int64_t n = 1;
  for (const char* p = shape.c_str(); *p;) {
    if (*p >= '0' && *p <= '9') {
      char* end = nullptr;
      n *= std::strtoll(p, &end, 10);
      p = end;
    } else {
      ++p;
    }
  }
  return n;
}

const JValue* str_attr(const JValue& node, const char* key) {
  const JValue* attrs = node.get("attrs");
  const JValue* v = attrs && attrs->kind == JValue::kObj ? attrs->get(key) : nullptr;
  return v && v->kind == JValue::kStr ? v : nullptr;
}

}  // namespace

std::shared_ptr<const KernelLaunch> plan_kernel_launch(const std::string& json, const std::vector<int>& input_values,
                                                       const std::vector<int64_t>& input_elems,
                                                       const std::vector<int64_t>& head_elems, bool all_cpu_float32,
                                                       int dev_id) {
  if (!all_cpu_float32 || !kernel_jobs_work() || input_elems.size() != input_values.size()) return nullptr;
  const Entries* lib = entries();
  if (!lib) return nullptr;
  JValue g;
  try {
    g = parse_json(json);
  } catch (const std::exception&) {
    return nullptr;
  }
  const JValue* nodes = g.get("nodes");
  const JValue* heads = g.get("heads");
  if (!nodes || !heads || nodes->kind != JValue::kArr || heads->kind != JValue::kArr ||
      head_elems.size() != heads->arr.size())
    return nullptr;
  const int num_nodes = static_cast<int>(nodes->arr.size());
  auto plan = std::make_shared<KernelLaunch>();
  plan->run = lib->run;
  plan->dev_id = dev_id;
  plan->head_elems = head_elems;
  // Per node: its step (-1 for a variable), and per step where each result goes.
  std::vector<int> step_of(num_nodes, -1);
  for (int i = 0; i < num_nodes; ++i) {
    const JValue* op = nodes->arr[i].get("op");
    if (!op || op->kind != JValue::kStr) return nullptr;
    if (op->str == "null") continue;
    if (op->str != "_minpy_fused_elemwise") return nullptr;  // only our kernels
    const JValue* nout = str_attr(nodes->arr[i], "num_outputs");
    const JValue* shape = str_attr(nodes->arr[i], "out_shape");
    if (!nout || !shape || std::atoi(nout->str.c_str()) < 1) return nullptr;
    step_of[i] = static_cast<int>(plan->steps.size());
    KernelLaunch::Step st;
    st.outputs.assign(std::atoi(nout->str.c_str()), KernelSlot{});
    st.out_elems.assign(st.outputs.size(), shape_elems(shape->str));
    plan->steps.push_back(std::move(st));
  }
  if (plan->steps.empty()) return nullptr;
  // Heads: results written into the launch's output arrays, each result at most one head.
  for (size_t h = 0; h < heads->arr.size(); ++h) {
    const JValue& e = heads->arr[h];
    if (e.kind != JValue::kArr || e.arr.size() < 2) return nullptr;
    const int node = e.arr[0].as_int(), k = e.arr[1].as_int();
    if (node < 0 || node >= num_nodes || step_of[node] < 0) return nullptr;  // a graph input returned as is
    auto& outs = plan->steps[step_of[node]].outputs;
    if (k < 0 || k >= static_cast<int>(outs.size()) || outs[k].kind != KernelSlot::kNone) return nullptr;
    if (plan->steps[step_of[node]].out_elems[k] != head_elems[h]) return nullptr;
    outs[k] = KernelSlot{KernelSlot::kHead, static_cast<int>(h)};
  }
  // Operands: a graph input (variables are named "v<value>", graph.cc) or an earlier kernel's
  // result, which lives in a buffer of the launch unless it is a head.
  for (int i = 0; i < num_nodes; ++i) {
    if (step_of[i] < 0) continue;
    KernelLaunch::Step& st = plan->steps[step_of[i]];
    const JValue& node = nodes->arr[i];
    const JValue* ins = node.get("inputs");
    if (!ins || ins->kind != JValue::kArr) return nullptr;
    for (const JValue& e : ins->arr) {
      if (e.kind != JValue::kArr || e.arr.size() < 2) return nullptr;
      const int src = e.arr[0].as_int(), k = e.arr[1].as_int();
      if (src < 0 || src >= i) return nullptr;  // the JSON lists nodes in topological order
      if (step_of[src] >= 0) {
        KernelLaunch::Step& from = plan->steps[step_of[src]];
        if (k < 0 || k >= static_cast<int>(from.outputs.size())) return nullptr;
        KernelSlot& made = from.outputs[k];
        if (made.kind == KernelSlot::kNone) {
          made = KernelSlot{KernelSlot::kTemp, static_cast<int>(plan->temp_elems.size())};
          plan->temp_elems.push_back(from.out_elems[k]);
        }
        st.inputs.push_back(made);
        st.in_elems.push_back(from.out_elems[k]);
        continue;
      }
      const JValue* name = nodes->arr[src].get("name");
      if (!name || name->kind != JValue::kStr || name->str.size() < 2 || name->str[0] != 'v') return nullptr;
      auto at = std::find(input_values.begin(), input_values.end(), std::atoi(name->str.c_str() + 1));
      if (at == input_values.end()) return nullptr;
      const int pos = static_cast<int>(at - input_values.begin());
      auto seen = std::find(plan->input_pos.begin(), plan->input_pos.end(), pos);
      const int index = static_cast<int>(seen - plan->input_pos.begin());
      if (seen == plan->input_pos.end()) {
        plan->input_pos.push_back(pos);
        plan->input_elems.push_back(input_elems[pos]);
      }
      st.inputs.push_back(KernelSlot{KernelSlot::kInput, index});
      st.in_elems.push_back(input_elems[pos]);
    }
    std::vector<const char*> keys, vals;
    const JValue* attrs = node.get("attrs");
    for (const auto& kv : attrs->obj) {
      if (kv.second.kind != JValue::kStr) return nullptr;
      keys.push_back(kv.first.c_str());
      vals.push_back(kv.second.str.c_str());
    }
    void* program = lib->create(static_cast<int>(keys.size()), keys.data(), vals.data());
    if (!program) return nullptr;
    st.program = std::shared_ptr<void>(program, lib->free);
  }
  return plan;
}

}  // namespace minpy
