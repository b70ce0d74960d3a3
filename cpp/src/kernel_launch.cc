// Plans of one-kernel graphs: see kernel_launch.h (the launch itself is kernel_job.cc).
#include "kernel_launch.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "json.h"

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

// Resolved once for the library MXNet loaded (GIL held); null if an entry point is missing.
const Entries* entries(const std::string& kernel_library) {
  static std::string loaded_from;
  static Entries e;
  if (kernel_library.empty()) return nullptr;
  if (loaded_from != kernel_library) {
    loaded_from = kernel_library;
    e = Entries{};
    if (void* h = dlopen(kernel_library.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
      e.create = reinterpret_cast<ProgramCreate>(dlsym(h, "minpy_fused_program_create"));
      e.free = reinterpret_cast<ProgramFree>(dlsym(h, "minpy_fused_program_free"));
      e.run = reinterpret_cast<FusedProgramRun>(dlsym(h, "minpy_fused_program_run"));
      dlclose(h);  // RTLD_NOLOAD took a reference: MXNet's own keeps it loaded
    }
  }
  return e.create && e.free && e.run ? &e : nullptr;
}

}  // namespace

std::shared_ptr<const KernelLaunch> plan_kernel_launch(const std::string& json, const std::vector<int>& input_values,
                                                       const std::vector<int64_t>& input_elems,
                                                       const std::vector<int64_t>& head_elems, bool all_cpu_float32,
                                                       int dev_id, const std::string& kernel_library) {
  if (!all_cpu_float32 || !kernel_jobs_work()) return nullptr;
  const Entries* lib = entries(kernel_library);
  if (!lib) return nullptr;
  JValue g;
  try {
    g = parse_json(json);
  } catch (const std::exception&) {
    return nullptr;
  }
  const JValue* nodes = g.get("nodes");
  const JValue* heads = g.get("heads");
  if (!nodes || !heads || nodes->kind != JValue::kArr || heads->kind != JValue::kArr) return nullptr;
  int kernel = -1;
  for (size_t i = 0; i < nodes->arr.size(); ++i) {
    const JValue* op = nodes->arr[i].get("op");
    if (!op || op->kind != JValue::kStr) return nullptr;
    if (op->str == "null") continue;
    if (kernel >= 0 || op->str != "_minpy_fused_elemwise") return nullptr;  // one node, ours
    kernel = static_cast<int>(i);
  }
  if (kernel < 0) return nullptr;
  const JValue& node = nodes->arr[kernel];
  auto plan = std::make_shared<KernelLaunch>();
  plan->run = lib->run;
  plan->dev_id = dev_id;
  plan->num_heads = static_cast<int>(heads->arr.size());
  if (head_elems.size() != heads->arr.size() || input_elems.size() != input_values.size()) return nullptr;
  // Inputs: variables named "v<value>" (graph.cc), each found among the CachedOp's inputs.
  const JValue* ins = node.get("inputs");
  if (!ins || ins->kind != JValue::kArr) return nullptr;
  for (const JValue& e : ins->arr) {
    if (e.kind != JValue::kArr || e.arr.empty()) return nullptr;
    const int src = e.arr[0].as_int();
    if (src < 0 || src >= static_cast<int>(nodes->arr.size())) return nullptr;
    const JValue* name = nodes->arr[src].get("name");
    if (!name || name->kind != JValue::kStr || name->str.size() < 2 || name->str[0] != 'v') return nullptr;
    const int value = std::atoi(name->str.c_str() + 1);
    auto at = std::find(input_values.begin(), input_values.end(), value);
    if (at == input_values.end()) return nullptr;
    const int pos = static_cast<int>(at - input_values.begin());
    plan->input_pos.push_back(pos);
    plan->in_elems.push_back(input_elems[pos]);
  }
  // Outputs: every head is an output of the kernel, each output at most one head.
  const JValue* attrs = node.get("attrs");
  if (!attrs || attrs->kind != JValue::kObj) return nullptr;
  const JValue* num_outputs = attrs->get("num_outputs");
  if (!num_outputs || num_outputs->kind != JValue::kStr) return nullptr;
  const int nout = std::atoi(num_outputs->str.c_str());
  if (nout < 1) return nullptr;
  plan->output_head.assign(nout, -1);
  plan->out_elems.assign(nout, 0);
  for (size_t h = 0; h < heads->arr.size(); ++h) {
    const JValue& e = heads->arr[h];
    if (e.kind != JValue::kArr || e.arr.size() < 2 || e.arr[0].as_int() != kernel) return nullptr;
    const int k = e.arr[1].as_int();
    if (k < 0 || k >= nout || plan->output_head[k] >= 0) return nullptr;
    plan->output_head[k] = static_cast<int>(h);
    plan->out_elems[k] = head_elems[h];
  }
  std::vector<const char*> keys, vals;
  for (const auto& kv : attrs->obj) {
    if (kv.second.kind != JValue::kStr) return nullptr;
    keys.push_back(kv.first.c_str());
    vals.push_back(kv.second.str.c_str());
  }
  void* program = lib->create(static_cast<int>(keys.size()), keys.data(), vals.data());
  if (!program) return nullptr;
  plan->program = std::shared_ptr<void>(program, lib->free);
  return plan;
}

}  // namespace minpy
