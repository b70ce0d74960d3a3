// Plans of graphs made only of our kernels: see kernel_launch.h (the launch itself is
// kernel_job.cc).
#include "kernel_launch.h"

#include <algorithm>
#include <cstdlib>

#include "json.h"
#include "runtime.h"

namespace minpy {

namespace {

// The kernel library's entry points for a kind of program (cpp/kernels/fused_elemwise.cc,
// cpp/kernels/fc_op.cc).
using ProgramCreate = void* (*)(int num_attrs, const char* const* keys, const char* const* vals);
using ProgramFree = void (*)(void* program);

struct Entries {
  ProgramCreate create = nullptr;
  ProgramFree free = nullptr;
  FusedProgramRun run = nullptr;
  bool found() const { return create && free && run; }
};

// Looked up until found, then kept (MXNet never unloads the library). GIL held.
const Entries& entries_of(Entries& e, const char* create, const char* free, const char* run) {
  if (!e.found()) {
    e.create = reinterpret_cast<ProgramCreate>(kernel_symbol(create));
    e.free = reinterpret_cast<ProgramFree>(kernel_symbol(free));
    e.run = reinterpret_cast<FusedProgramRun>(kernel_symbol(run));
  }
  return e;
}

const Entries& fused_entries() {
  static Entries e;
  return entries_of(e, "minpy_fused_program_create", "minpy_fused_program_free", "minpy_fused_program_run");
}

const Entries& fc_entries() {
  static Entries e;
  return entries_of(e, "minpy_fc_program_create", "minpy_fc_program_free", "minpy_fc_program_run");
}

// Concat along the first axis of row-major arrays: the inputs' elements one after the other.
// Its "program" is the number of inputs.
const char* concat_rows(const void* program, const float* const* in, const int64_t* in_sizes, float* const* out,
                        const int64_t* out_sizes) {
  const int64_t n = *static_cast<const int64_t*>(program);
  int64_t at = 0;
  for (int64_t j = 0; j < n; ++j) at += in_sizes[j];
  if (at != out_sizes[0]) return "Concat: the output size is not the inputs' sum";
  if (!out[0]) return nullptr;
  at = 0;
  for (int64_t j = 0; j < n; ++j) {
    std::copy(in[j], in[j] + in_sizes[j], out[0] + at);
    at += in_sizes[j];
  }
  return nullptr;
}

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

// The node's program from its attributes (all strings), or null.
std::shared_ptr<void> make_program(const Entries& lib, const JValue& node) {
  std::vector<const char*> keys, vals;
  if (const JValue* attrs = node.get("attrs"))
    for (const auto& kv : attrs->obj) {
      if (kv.second.kind != JValue::kStr) return nullptr;
      keys.push_back(kv.first.c_str());
      vals.push_back(kv.second.str.c_str());
    }
  void* program = lib.create(static_cast<int>(keys.size()), keys.data(), vals.data());
  if (!program) return nullptr;
  return std::shared_ptr<void>(program, lib.free);
}

}  // namespace

std::shared_ptr<const KernelLaunch> plan_kernel_launch(const std::string& json, const std::vector<int>& input_values,
                                                       const std::vector<int64_t>& input_elems,
                                                       const std::vector<int64_t>& head_elems, bool all_cpu_float32,
                                                       int dev_id) {
  if (!all_cpu_float32 || !kernel_jobs_work() || input_elems.size() != input_values.size()) return nullptr;
  const Entries& fused = fused_entries();
  if (!fused.found()) return nullptr;
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
  plan->dev_id = dev_id;
  plan->head_elems = head_elems;
  // Per node: its step (-1 for a variable); per step operand, an earlier step's result (step, k)
  // or a graph input (-1, index into input_pos).
  std::vector<int> step_of(num_nodes, -1);
  std::vector<std::vector<std::pair<int, int>>> operands;
  for (int i = 0; i < num_nodes; ++i) {
    const JValue& node = nodes->arr[i];
    const JValue* op = node.get("op");
    if (!op || op->kind != JValue::kStr) return nullptr;
    if (op->str == "null") continue;
    KernelLaunch::Step st;
    std::vector<std::pair<int, int>> from;
    // Operands: a graph input (variables are named "v<value>", graph.cc) or an earlier kernel's result.
    const JValue* ins = node.get("inputs");
    if (!ins || ins->kind != JValue::kArr) return nullptr;
    for (const JValue& e : ins->arr) {
      if (e.kind != JValue::kArr || e.arr.size() < 2) return nullptr;
      const int src = e.arr[0].as_int(), k = e.arr[1].as_int();
      if (src < 0 || src >= i) return nullptr;  // the JSON lists nodes in topological order
      if (step_of[src] >= 0) {
        const KernelLaunch::Step& made = plan->steps[step_of[src]];
        if (k < 0 || k >= static_cast<int>(made.out_elems.size())) return nullptr;
        from.push_back({step_of[src], k});
        st.in_elems.push_back(made.out_elems[k]);
        continue;
      }
      const JValue* name = nodes->arr[src].get("name");
      if (!name || name->kind != JValue::kStr || name->str.size() < 2 || name->str[0] != 'v') return nullptr;
      auto at = std::find(input_values.begin(), input_values.end(), std::atoi(name->str.c_str() + 1));
      if (at == input_values.end()) return nullptr;
      const int pos = static_cast<int>(at - input_values.begin());
      auto seen = std::find(plan->input_pos.begin(), plan->input_pos.end(), pos);
      const int index = static_cast<int>(seen - plan->input_pos.begin());  // (the new last one if not seen)
      if (seen == plan->input_pos.end()) {
        plan->input_pos.push_back(pos);
        plan->input_elems.push_back(input_elems[pos]);
      }
      from.push_back({-1, index});
      st.in_elems.push_back(input_elems[pos]);
    }
    if (op->str == "_minpy_fused_elemwise") {
      const JValue* nout = str_attr(node, "num_outputs");
      const JValue* shape = str_attr(node, "out_shape");
      if (!nout || !shape || std::atoi(nout->str.c_str()) < 1) return nullptr;
      st.out_elems.assign(std::atoi(nout->str.c_str()), shape_elems(shape->str));
      st.program = make_program(fused, node);
      st.run = fused.run;
    } else if (op->str == "_minpy_fc") {  // [X, W, (b)]: M * N of M * K by N * K
      const Entries& fc = fc_entries();
      const JValue* hidden = str_attr(node, "num_hidden");
      const int64_t N = hidden ? std::atoll(hidden->str.c_str()) : 0;
      if (!fc.found() || N < 1 || st.in_elems.size() < 2 || st.in_elems[1] % N) return nullptr;
      const int64_t K = st.in_elems[1] / N;
      if (K < 1 || st.in_elems[0] % K) return nullptr;
      st.out_elems = {st.in_elems[0] / K * N};
      st.program = make_program(fc, node);
      st.run = fc.run;
    } else if (op->str == "Concat") {  // along the first axis only: the inputs' rows in turn
      const JValue* dim = str_attr(node, "dim");
      if (!dim || dim->str != "0") return nullptr;
      int64_t total = 0;
      for (int64_t n : st.in_elems) total += n;
      st.out_elems = {total};
      st.program = std::make_shared<int64_t>(static_cast<int64_t>(st.in_elems.size()));
      st.run = concat_rows;
    } else {
      return nullptr;  // only our kernels
    }
    if (!st.program) return nullptr;
    st.outputs.assign(st.out_elems.size(), KernelSlot{});
    step_of[i] = static_cast<int>(plan->steps.size());
    plan->steps.push_back(std::move(st));
    operands.push_back(std::move(from));
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
  // Where each operand is read from: an input, a head, or a buffer of the launch for a result no
  // head holds.
  for (size_t s = 0; s < plan->steps.size(); ++s)
    for (const auto& f : operands[s]) {
      if (f.first < 0) {
        plan->steps[s].inputs.push_back(KernelSlot{KernelSlot::kInput, f.second});
        continue;
      }
      KernelLaunch::Step& from = plan->steps[f.first];
      KernelSlot& made = from.outputs[f.second];
      if (made.kind == KernelSlot::kNone) {
        made = KernelSlot{KernelSlot::kTemp, static_cast<int>(plan->temp_elems.size())};
        plan->temp_elems.push_back(from.out_elems[f.second]);
      }
      plan->steps[s].inputs.push_back(made);
    }
  return plan;
}

}  // namespace minpy
