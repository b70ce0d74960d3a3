#include "executor.h"

#include <Python.h>  // only to release the GIL around a blocking call (dummy_input)

#include <chrono>
#include <map>

#include "mxapi.h"

namespace minpy {

Executor::~Executor() {
  if (op) MXFreeCachedOp(op);
  for (auto h : placeholders) MXNDArrayFree(h);
}

namespace {

std::string nondiff_op_in(const std::string& msg) {
  const std::string marker = "is non-differentiable";
  auto p = msg.find(marker);
  if (p == std::string::npos) return "";
  auto q = msg.rfind("Operator ", p);
  if (q == std::string::npos) return "";
  q += 9;
  std::string name = msg.substr(q, p - q);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  return name;
}

}  // namespace

std::shared_ptr<Executor> compile(const Trace& trace, const std::vector<OutputSpec>& outputs,
                                  std::unordered_set<std::string>* nondiff, bool fuse, LoweredGraph* lowered_out) {
  auto t0 = std::chrono::steady_clock::now();
  for (int attempt = 0;; ++attempt) {
    // In a recorded graph, BlockGrad would turn eager's error for a backward through an op
    // without gradient into zeros: such a segment runs op by op (later calls run eagerly).
    if (trace.recording)
      for (const Node& n : trace.nodes)
        if (nondiff->count(n.op->name))
          throw MXError("operator " + n.op->name + " has no gradient: recorded ops replayed one by one");
    LoweredGraph g = lower(trace, outputs, *nondiff, fuse);
    SymbolHandle sym = nullptr;
    MX_CALL(MXSymbolCreateFromJSON(g.json.c_str(), &sym));
    const char* keys[] = {"static_alloc", "static_shape"};
    const char* vals[] = {"true", "true"};
    CachedOpHandle op = nullptr;
    int rc = MXCreateCachedOpEx(sym, 2, keys, vals, &op);
    if (rc != 0) {
      std::string msg = MXGetLastError();
      MXSymbolFree(sym);
      std::string bad = nondiff_op_in(msg);
      if (!bad.empty() && !nondiff->count(bad) && attempt < 64) {
        nondiff->insert(bad);
        continue;
      }
      if (fuse && !g.fusion.units.empty()) {  // never lose a graph to our kernels: build it without them
        fuse = false;
        continue;
      }
      throw MXError("building the graph failed: " + msg);
    }
    // CachedOp inputs come in the symbol's input order; map them back to values.
    nn_uint n = 0;
    const char** names = nullptr;
    rc = NNSymbolListInputNames(sym, 0, &n, &names);
    auto exe = std::make_shared<Executor>();
    exe->op = op;
    if (rc != 0) {
      MXSymbolFree(sym);
      throw MXError(std::string("listing graph inputs failed: ") + MXGetLastError());
    }
    for (nn_uint i = 0; i < n; ++i) exe->input_values.push_back(std::atoi(names[i] + 1));
    MXSymbolFree(sym);
    exe->num_outputs = static_cast<int>(outputs.size());
    exe->output_in_place = g.output_in_place;
    for (int p = 0; p < g.placeholders; ++p) {
      AVal a = trace.values[outputs.at(0).value].aval;  // CachedOp wants every array on one context
      a.ndim = 1;
      a.dims[0] = 1;
      a.dtype = 0;
      exe->placeholders.push_back(new_lazy_array(a));
    }
    exe->num_nodes = g.num_nodes;
    exe->json = g.json;
    exe->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (lowered_out) *lowered_out = std::move(g);
    return exe;
  }
}

// The stand-in input of graphs that have none (see lower()), one per context.
NDArrayHandle dummy_input(int dev_type, int dev_id) {
  static std::map<std::pair<int, int>, NDArrayHandle> dummies;
  auto& h = dummies[{dev_type, dev_id}];
  if (!h) {
    AVal a;
    a.ndim = 1;
    a.dims[0] = 1;
    a.dev_type = dev_type;
    a.dev_id = dev_id;
    h = new_lazy_array(a);
    float zero = 0;
    // The copy waits for MXNet's engine, whose worker may be calling Python: not with the GIL.
    PyThreadState* saved = PyEval_SaveThread();
    int rc = MXNDArraySyncCopyFromCPU(h, &zero, 1);
    PyEval_RestoreThread(saved);
    mx_check(rc, "MXNDArraySyncCopyFromCPU (a graph's stand-in input)");
  }
  return h;
}

AutogradState::AutogradState(bool rec, bool train) {
  MXAutogradSetIsRecording(rec ? 1 : 0, &prev_rec);
  MXAutogradSetIsTraining(train ? 1 : 0, &prev_train);
}

AutogradState::~AutogradState() {
  int dummy;
  MXAutogradSetIsRecording(prev_rec, &dummy);
  MXAutogradSetIsTraining(prev_train, &dummy);
}

void launch_arrays(const Executor& exe, const Trace& trace, const std::vector<OutputSpec>& outputs,
                   std::vector<NDArrayHandle>* ins, std::vector<NDArrayHandle>* outs) {
  ins->reserve(exe.input_values.size());
  for (int v : exe.input_values) {
    if (v >= 0) {
      ins->push_back(trace.values[v].ext);
    } else {
      const AVal& a = trace.values[outputs.at(0).value].aval;
      ins->push_back(dummy_input(a.dev_type, a.dev_id));
    }
  }
  outs->reserve(outputs.size() + exe.placeholders.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!exe.output_in_place[i]) outs->push_back(outputs[i].handle);
  outs->insert(outs->end(), exe.placeholders.begin(), exe.placeholders.end());
}

int invoke_cached_op(CachedOpHandle op, std::vector<NDArrayHandle>& ins, std::vector<NDArrayHandle>& outs) {
  int nout = static_cast<int>(outs.size());
  NDArrayHandle* outp = outs.data();
  const int* stypes = nullptr;
  return MXInvokeCachedOpEx(op, static_cast<int>(ins.size()), ins.data(), &nout, &outp, &stypes);
}

void run(Executor& exe, const Trace& trace, const std::vector<OutputSpec>& outputs) {
  std::vector<NDArrayHandle> ins, outs;
  launch_arrays(exe, trace, outputs, &ins, &outs);
  AutogradState state(trace.recording, trace.training);
  MX_CALL(invoke_cached_op(exe.op, ins, outs));
  ++exe.runs;
}

void run_eagerly(const Trace& trace, const std::vector<OutputSpec>& outputs) {
  std::vector<NDArrayHandle> handle(trace.values.size(), nullptr);
  std::vector<NDArrayHandle> temps;
  for (size_t v = 0; v < trace.values.size(); ++v)
    if (trace.values[v].node < 0) handle[v] = trace.values[v].ext;
  for (const auto& o : outputs) handle[o.value] = o.handle;
  AutogradState state(trace.recording, trace.training);
  try {
    for (const Node& n : trace.nodes) {
      std::vector<NDArrayHandle> ins, outs;
      for (int v : n.in) ins.push_back(handle[v]);
      for (size_t i = 0; i < n.out.size(); ++i) {
        int v = n.out[i];
        if (i < n.targets.size() && n.targets[i]) handle[v] = n.targets[i];  // in-place, as eager wrote it
        if (!handle[v]) {
          handle[v] = new_lazy_array(trace.values[v].aval);
          temps.push_back(handle[v]);
        }
        outs.push_back(handle[v]);
      }
      std::vector<const char*> keys, vals;
      for (const auto& a : n.attrs) {
        keys.push_back(a.key.c_str());
        vals.push_back(a.val.c_str());
      }
      int nout = static_cast<int>(outs.size());
      NDArrayHandle* outp = outs.data();
      const int* stypes = nullptr;
      MX_CALL(MXImperativeInvokeEx(n.op->creator, static_cast<int>(ins.size()), ins.data(), &nout, &outp,
                                   static_cast<int>(keys.size()), keys.data(), vals.data(), &stypes));
    }
  } catch (...) {
    for (auto h : temps) MXNDArrayFree(h);
    throw;
  }
  for (auto h : temps) MXNDArrayFree(h);
}

std::shared_ptr<Executor> ExecutorCache::find(const Key128& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

size_t ExecutorCache::insert(const Key128& key, std::shared_ptr<Executor> exe) {
  auto it = map_.find(key);
  if (it != map_.end()) {
    lru_.erase(it->second);
    map_.erase(it);
  }
  lru_.emplace_front(key, std::move(exe));
  map_[key] = lru_.begin();
  return evict_to(capacity_);
}

size_t ExecutorCache::evict_to(size_t n) {
  size_t evicted = 0;
  while (map_.size() > n && !lru_.empty()) {
    map_.erase(lru_.back().first);
    lru_.pop_back();
    ++evicted;
  }
  return evicted;
}

void ExecutorCache::set_capacity(size_t c) {
  capacity_ = c < 1 ? 1 : c;
  evict_to(capacity_);
}

void ExecutorCache::clear() {
  map_.clear();
  lru_.clear();
}

std::vector<std::shared_ptr<Executor>> ExecutorCache::entries() const {
  std::vector<std::shared_ptr<Executor>> out;
  for (const auto& e : lru_) out.push_back(e.second);
  return out;
}

}  // namespace minpy
