#include "update_launch.h"

#include <algorithm>
#include <memory>
#include <unordered_map>

#include "failures.h"
#include "launch.h"
#include "mxapi.h"

namespace minpy {

namespace {

// The kernel library's entry points for a direct run (cpp/kernels/multi_update.cc).
using PlanCreate = void* (*)(const char* op, int num_attrs, const char* const* keys, const char* const* vals);
using PlanFree = void (*)(void* plan);
using PlanRun = void (*)(const void* plan, int num_weights, void* const* arrays, const int64_t* sizes,
                         const float* lrs, const float* wds);

struct KernelEntry {
  PlanCreate create = nullptr;
  PlanFree free = nullptr;
  PlanRun run = nullptr;
};

// Looked up until found, then kept (MXNet never unloads the library): a Trainer step asks for it.
const KernelEntry* kernel_entry() {
  static KernelEntry entry;
  if (!entry.create || !entry.free || !entry.run) {
    entry.create = reinterpret_cast<PlanCreate>(kernel_symbol("minpy_update_plan_create"));
    entry.free = reinterpret_cast<PlanFree>(kernel_symbol("minpy_update_plan_free"));
    entry.run = reinterpret_cast<PlanRun>(kernel_symbol("minpy_update_plan_run"));
  }
  return entry.create && entry.free && entry.run ? &entry : nullptr;
}

// Plans by kernel and shared attributes: parsed once, reused at every step with the same
// hyper-parameters. A queued operation keeps its plan alive.
std::shared_ptr<void> plan_for(const KernelEntry& k, const DirectUpdate& u) {
  static std::unordered_map<std::string, std::shared_ptr<void>> plans;  // the GIL is held
  std::string key = u.kernel;
  for (const auto& a : u.attrs) key.append("|").append(a.first).append("=").append(a.second);
  auto it = plans.find(key);
  if (it != plans.end()) return it->second;
  std::vector<const char*> keys, vals;
  for (const auto& a : u.attrs) keys.push_back(a.first), vals.push_back(a.second.c_str());
  void* raw = k.create(u.kernel.c_str(), static_cast<int>(keys.size()), keys.data(), vals.data());
  if (!raw) return nullptr;
  std::shared_ptr<void> plan(raw, k.free);
  if (plans.size() >= 64) plans.clear();  // hyper-parameters changed at every step: keep a few
  plans.emplace(std::move(key), plan);
  return plan;
}

struct Job {
  std::shared_ptr<void> plan;
  PlanRun run = nullptr;
  int num_weights = 0;
  std::vector<void*> data;
  std::vector<int64_t> sizes;
  std::vector<float> lrs, wds;
  std::vector<std::shared_ptr<const void>> chunks;  // the arrays' storage, alive until the run
};

// On MXNet's worker, with every array's variable held for writing.
void run_job(void*, void* param) {
  Job& j = *static_cast<Job*>(param);
  if (ChunkReorder reorder = chunk_reorder())
    for (const auto& c : j.chunks) reorder(const_cast<void*>(c.get()));
  j.run(j.plan.get(), j.num_weights, j.data.data(), j.sizes.data(), j.lrs.data(), j.wds.data());
}

void free_job(void* param) { delete static_cast<Job*>(param); }

}  // namespace

bool update_plan(const std::string& kernel, const std::vector<std::pair<const char*, std::string>>& attrs,
                 std::shared_ptr<void>* plan, UpdatePlanRun* run) {
  const KernelEntry* k = kernel_entry();
  if (!k) return false;
  DirectUpdate u;
  u.kernel = kernel;
  u.attrs = attrs;
  *plan = plan_for(*k, u);
  *run = k->run;
  return *plan != nullptr;
}

bool launch_update_directly(ThreadState& ts, const DirectUpdate& u, bool flushing) {
  if (!R->cfg.direct_updates || ts.capturing || launches_unsettled() != 0) return false;
  if (!flushing && (!ts.trace.nodes.empty() || R->pending != 0)) return false;
  const size_t nw = u.sizes.size();
  if (nw == 0 || u.stride < 2 || u.arrays.size() != nw * static_cast<size_t>(u.stride)) return false;
  if (!chunk_identity_works() || !data_peek_works()) return false;
  const KernelEntry* k = kernel_entry();
  if (!k) return false;
  auto job = std::make_unique<Job>();
  job->data.reserve(u.arrays.size());
  job->chunks.reserve(u.arrays.size());
  std::vector<const void*> chunks;
  chunks.reserve(u.arrays.size());
  for (size_t w = 0; w < nw; ++w)
    for (int j = 0; j < u.stride; ++j) {
      NDArrayHandle h = u.arrays[w * u.stride + j];
      const size_t elem = (u.mp && j < 2) ? 2 : 4;  // float16 weight and gradient; float32 otherwise
      void* p = data_of(h, static_cast<size_t>(u.sizes[w]) * elem);
      if (!p) return false;  // not allocated yet (a pending op allocates it), or not dense
      job->data.push_back(p);
      chunks.push_back(chunk_of(h));
    }
  std::sort(chunks.begin(), chunks.end());
  if (std::adjacent_find(chunks.begin(), chunks.end()) != chunks.end()) return false;
  if (any_suspect(u.arrays)) return false;
  job->plan = plan_for(*k, u);
  if (!job->plan) return false;
  for (NDArrayHandle h : u.arrays) job->chunks.push_back(chunk_ref(h));
  job->run = k->run;
  job->num_weights = static_cast<int>(nw);
  job->sizes = u.sizes;
  job->lrs = u.lrs;
  job->wds = u.wds;
  const struct {
    int dev_type, dev_id;  // mxnet::Context
  } ctx{1, u.dev_id};
  std::vector<NDArrayHandle> arrays(u.arrays);
  Job* param = job.release();
  if (MXEnginePushSyncND(run_job, param, free_job, const_cast<void*>(static_cast<const void*>(&ctx)), nullptr, 0,
                         arrays.data(), static_cast<int>(arrays.size()), nullptr, 0, "minpy_trainer_update") != 0) {
    // MXNet frees the parameter only once it took it: a failed push is reported as MXNet's error
    throw mxnet_failure("minpy_jit: pushing the Trainer update failed");
  }
  return true;
}

}  // namespace minpy
