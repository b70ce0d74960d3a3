#include "executor.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_set>

#include "backward.h"
#include "mxapi.h"
#include "nogil.h"
#include "projections.h"
#include "runtime.h"

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

// The executor's graph as one launch of its kernels (kernel_launch.h), or null.
std::shared_ptr<const KernelLaunch> plan_launch(const Executor& exe, const Trace& trace,
                                               const std::vector<OutputSpec>& outputs) {
  bool cpu_float32 = true;
  int dev_id = -1;
  auto check = [&](const AVal& a) {
    cpu_float32 = cpu_float32 && a.dev_type == 1 && a.dtype == 0 && (dev_id < 0 || a.dev_id == dev_id);
    dev_id = a.dev_id;
    return static_cast<int64_t>(a.size());
  };
  std::vector<std::vector<int64_t>> input_shapes;
  for (int v : exe.input_values) {
    if (v < 0) {  // the stand-in input of a graph that has none (dummy_input: one element)
      input_shapes.push_back({1});
      continue;
    }
    const AVal& a = trace.values[v].aval;
    check(a);
    input_shapes.emplace_back(a.dims, a.dims + a.ndim);
  }
  // The heads in CachedOp's order (launch_arrays): the outputs not written in place, then the
  // placeholders of in-place updates (one element each).
  std::vector<int64_t> head_elems;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!exe.output_in_place[i]) head_elems.push_back(check(trace.values[outputs[i].value].aval));
  head_elems.resize(head_elems.size() + exe.placeholders.size(), 1);
  return plan_kernel_launch(exe.json, exe.input_values, input_shapes, head_elems, cpu_float32, dev_id);
}

// MXNet's CachedOp merges nodes with the same op, attributes and inputs unless
// MXNET_ELIMINATE_COMMON_EXPR is 0, reading it when a CachedOp is made and at its first run on a
// context; in our graphs the merge gave wrong values (minpy_jit/__init__.py sets 0 at import,
// tests/test_common_expressions.py). Changed since, it is set back, with a warning, before a graph
// is built (the CachedOps made later from a built graph are not checked).
void keep_common_expr_off() {
  static const char kName[] = "MXNET_ELIMINATE_COMMON_EXPR";
  const char* v = std::getenv(kName);
  if (v && std::strcmp(v, "0") == 0) return;
  const std::string was = v ? "'" + std::string(v) + "'" : "unset";
  setenv(kName, "0", 1);
  log_line(std::string("minpy_jit: WARNING: ") + kName + " was " + was + "; set back to 0 for the process: MXNet's " +
           "merging of identical nodes gives wrong values in jit() graphs (see README)");
}

}  // namespace

std::shared_ptr<Executor> compile(const Trace& trace, const std::vector<OutputSpec>& outputs,
                                  std::unordered_set<std::string>* nondiff, bool fuse, LoweredGraph* lowered_out,
                                  bool per_op_autograd) {
  auto t0 = std::chrono::steady_clock::now();
  keep_common_expr_off();
  for (int attempt = 0;; ++attempt) {
    // The set this attempt lowers with: another thread's compile may add to the shared one
    // while this one runs without the GIL, and a refusal naming an op this attempt did not yet
    // treat as non-differentiable must still retry (it was built as 'runs eagerly' for good).
    const std::unordered_set<std::string> known_nondiff = *nondiff;
    // In a recorded graph, BlockGrad would turn eager's error for a backward through an op
    // without gradient into zeros: such a segment runs op by op (later calls run eagerly).
    for (size_t i = 0; i < trace.nodes.size(); ++i)
      if (trace.recorded_node(i) && known_nondiff.count(trace.nodes[i].op->name))
        throw MXError("operator " + trace.nodes[i].op->name + " has no gradient: recorded ops replayed one by one");
    // Our rewrites (projections.h) cost speed at worst, never the graph: any failure in them or
    // in lowering what they made (a cycle) lowers the recorded trace.
    int batched = 0;
    std::shared_ptr<const Trace> rewritten;
    if (fuse && R->cfg.batch_projections) {
      try {
        rewritten = batch_projections(trace, live_nodes(trace, outputs), &batched);
      } catch (const std::exception&) {
        rewritten = nullptr;
      }
    }
    LoweredGraph g;
    try {
      g = lower(rewritten ? *rewritten : trace, outputs, known_nondiff, fuse);
      g.trace = rewritten;
    } catch (const std::exception&) {
      if (!rewritten) throw;
      g = lower(trace, outputs, known_nondiff, fuse);
    }
    const Trace& lowered = g.trace ? *g.trace : trace;
    SymbolHandle sym = nullptr;
    MX_CALL(without_gil([&] { return MXSymbolCreateFromJSON(g.json.c_str(), &sym); }));
    const char* keys[] = {"static_alloc", "static_shape"};
    const char* vals[] = {"true", "true"};
    const char* inline_keys[] = {"inline_limit"};
    const char* inline_vals[] = {"1000000000"};  // above any graph's node count: always inlined
    CachedOpHandle op = nullptr;
    int rc = without_gil([&] {
      return per_op_autograd ? MXCreateCachedOpEx(sym, 1, inline_keys, inline_vals, &op)
                             : MXCreateCachedOpEx(sym, 2, keys, vals, &op);
    });
    if (rc != 0) {
      std::string msg = MXGetLastError();
      MXSymbolFree(sym);
      std::string bad = nondiff_op_in(msg);
      if (!bad.empty() && !known_nondiff.count(bad) && attempt < 64) {
        nondiff->insert(bad);
        continue;
      }
      if (fuse && (!g.fusion.units.empty() || !g.fc_nodes.empty())) {  // never lose a graph to our kernels: build it without them
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
    exe->per_op_autograd = per_op_autograd;
    if (rc != 0) {
      MXSymbolFree(sym);
      throw MXError(std::string("listing graph inputs failed: ") + MXGetLastError());
    }
    for (nn_uint i = 0; i < n; ++i) exe->input_values.push_back(std::atoi(names[i] + 1));
    MXSymbolFree(sym);
    exe->num_outputs = static_cast<int>(outputs.size());
    exe->output_in_place = g.output_in_place;
    for (int v : g.ours_mutate)
      for (size_t i = 0; i < exe->input_values.size(); ++i)
        if (exe->input_values[i] == v) exe->layout_inputs.push_back(static_cast<int>(i));
    // An input the graph also writes (x /= 2 after x = concat(...)): CachedOp resets an
    // output's MKLDNN layout before the node writing it runs (InvalidateOutputs), so an
    // input in MKLDNN's layout would be read as plain memory. Eager's op reads a
    // default-layout copy. Made default-layout before the run, as for our ops (a position
    // listed twice is harmless: push_default_layout takes each storage chunk once).
    for (const OutputSpec& o : outputs)
      for (size_t i = 0; i < exe->input_values.size(); ++i)
        if (o.target_ext >= 0 && exe->input_values[i] == o.target_ext) exe->layout_inputs.push_back(static_cast<int>(i));
    exe->layout_outputs = g.ours_write_outputs;
    std::vector<char> mutated(trace.values.size(), 0);  // by any op: ours (ours_mutate) or MXNet's
    for (const Node& node : trace.nodes)
      for (int v : node.mutated) mutated[v] = 1;
    exe->input_written.assign(exe->input_values.size(), 0);
    for (size_t i = 0; i < exe->input_values.size(); ++i) {
      const int v = exe->input_values[i];
      exe->input_written[i] = v >= 0 && v < static_cast<int>(mutated.size()) && mutated[v];
    }
    for (int p = 0; p < g.placeholders; ++p) {
      AVal a = trace.values[outputs.at(0).value].aval;  // CachedOp wants every array on one context
      a.ndim = 1;
      a.dims[0] = 1;
      a.dtype = 0;
      exe->placeholders.push_back(new_lazy_array(a));
    }
    exe->num_nodes = g.num_nodes;
    exe->batched_projections = g.trace ? batched : 0;
    exe->fc_kernels = static_cast<int>(g.fc_nodes.size());
    exe->json = g.json;
    if (!per_op_autograd) exe->kernel_launch = plan_launch(*exe, lowered, outputs);
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
    int rc = without_gil([&] { return MXNDArraySyncCopyFromCPU(h, &zero, 1); });
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

NumpyShapeState::NumpyShapeState(bool np) {
  int cur = 0;
  MXIsNumpyShape(&cur);  // 0 off, 1 on in this thread, 2 on in every thread
  if ((cur != 0) == np || cur == 2) return;
  int dummy = 0;
  if (MXSetIsNumpyShape(np ? 1 : 0, &dummy) == 0) prev = cur;
}

NumpyShapeState::~NumpyShapeState() {
  int dummy = 0;
  if (prev >= 0) MXSetIsNumpyShape(prev, &dummy);
}

LaunchArrays launch_arrays(const Executor& exe, const Trace& trace, const std::vector<OutputSpec>& outputs) {
  LaunchArrays a;
  a.ins.reserve(exe.input_values.size());
  for (int v : exe.input_values) {
    if (v >= 0) {
      a.ins.push_back(trace.values[v].ext);
    } else {
      const AVal& av = trace.values[outputs.at(0).value].aval;
      a.ins.push_back(dummy_input(av.dev_type, av.dev_id));
    }
  }
  a.outs.reserve(outputs.size() + exe.placeholders.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!exe.output_in_place[i]) a.outs.push_back(outputs[i].handle);
  a.outs.insert(a.outs.end(), exe.placeholders.begin(), exe.placeholders.end());
  for (int p : exe.layout_inputs) a.ours_write.push_back(a.ins[p]);
  for (int o : exe.layout_outputs) a.ours_write.push_back(outputs[o].handle);
  a.stable_params = R->cfg.stable_params;
  a.direct_kernel = R->cfg.direct_kernels;
  return a;
}

ChunkReorder chunk_reorder() {
  static const ChunkReorder fn =
      reinterpret_cast<ChunkReorder>(dlsym(RTLD_DEFAULT, "_ZN5mxnet7NDArray5Chunk15Reorder2DefaultEv"));
  return fn;
}

namespace {

// MKLDNN's weight layouts and our library ops.
//
// In inference mode MXNet's MKLDNN convolution and fully-connected ops reorder their weight
// array in place into MKLDNN's blocked layout (asynchronously). MXNet hands a library op
// (lib_api.h) such an input as a default-layout *copy*, and its outputs as raw memory: a
// weight our update kernel writes in place is then written into the copy and lost, and one
// written as an output is read back in the blocked layout -- after an inference pass
// (Gluon's deferred initialisation, a validation pass) a training step silently kept or
// garbled some weights (seen on W3-style CNN training, 3 to 10 runs in 30). Before a graph
// with such writes runs, one engine op, ordered after everything pending on those arrays,
// turns each back to the default layout in place (Chunk::Reorder2Default, a no-op for an
// array that is not in MKLDNN's layout). It is resolved from libmxnet.so by name; a build
// without MKLDNN has none and needs none.

struct DefaultLayout {
  std::vector<std::shared_ptr<const void>> chunks;  // each array's storage, alive until the op ran
};

void to_default_layout(void*, void* param) {
  for (const auto& c : static_cast<DefaultLayout*>(param)->chunks) chunk_reorder()(const_cast<void*>(c.get()));
}

void free_default_layout(void* param) { delete static_cast<DefaultLayout*>(param); }

// separately: one engine op per array instead of one for all. MXNet's engine skips an op
// whose variables hold an error and passes the error to every variable it writes, so one op
// over all the arrays would carry one array's error into the others.
void push_default_layout(const std::vector<NDArrayHandle>& arrays, bool separately = false) {
  if (arrays.empty() || !chunk_reorder()) return;
  if (separately && arrays.size() > 1) {
    std::unordered_set<const void*> seen;
    for (NDArrayHandle h : arrays) {
      std::shared_ptr<const void> chunk = chunk_ref(h);
      if (chunk && !seen.insert(chunk.get()).second) continue;
      push_default_layout({h});
    }
    return;
  }
  // One engine variable per chunk, and each only once: an op that lists a variable twice waits
  // for itself forever (MXNet checks only in debug builds). A graph whose two updates mutate
  // one momentum array lists it twice, as does a view beside its base array.
  auto* job = new DefaultLayout;
  std::vector<NDArrayHandle> mutable_arrays;
  std::unordered_set<const void*> seen;  // a whole step's update mutates ~600 arrays
  for (NDArrayHandle h : arrays) {
    std::shared_ptr<const void> chunk = chunk_ref(h);
    if (chunk && !seen.insert(chunk.get()).second) continue;
    job->chunks.push_back(std::move(chunk));
    mutable_arrays.push_back(h);
  }
  int dev_type = 1, dev_id = 0;
  MXNDArrayGetContext(arrays[0], &dev_type, &dev_id);
  const struct {
    int dev_type, dev_id;  // mxnet::Context
  } ctx{dev_type, dev_id};
  if (MXEnginePushSyncND(to_default_layout, job, free_default_layout, const_cast<void*>(static_cast<const void*>(&ctx)),
                         nullptr, 0, mutable_arrays.data(), static_cast<int>(mutable_arrays.size()), nullptr, 0,
                         "minpy_default_layout") != 0)
    free_default_layout(job);
}

}  // namespace

std::shared_ptr<void> param_cached_op(const std::string& json, const std::vector<char>& stable) {
  std::string params = "[", data = "[";
  for (size_t i = 0; i < stable.size(); ++i) {
    std::string& list = stable[i] ? params : data;
    if (list.size() > 1) list += ',';
    list += std::to_string(i);
  }
  if (params.size() == 1) return nullptr;
  params += ']';
  data += ']';
  SymbolHandle sym = nullptr;
  if (MXSymbolCreateFromJSON(json.c_str(), &sym) != 0) return nullptr;
  const char* keys[] = {"static_alloc", "static_shape", "data_indices", "param_indices"};
  const char* vals[] = {"true", "true", data.c_str(), params.c_str()};
  CachedOpHandle op = nullptr;
  std::shared_ptr<void> made;
  if (MXCreateCachedOpEx(sym, 4, keys, vals, &op) == 0) made = std::shared_ptr<void>(op, [](void* o) { MXFreeCachedOp(o); });
  MXSymbolFree(sym);
  return made;
}

namespace {

// A static CachedOp of graph `json` that has not run (allocates its buffers at its first run).
CachedOpHandle fresh_static_op(const std::string& json) {
  SymbolHandle sym = nullptr;
  if (MXSymbolCreateFromJSON(json.c_str(), &sym) != 0) return nullptr;
  const char* keys[] = {"static_alloc", "static_shape"};
  const char* vals[] = {"true", "true"};
  CachedOpHandle op = nullptr;
  if (MXCreateCachedOpEx(sym, 2, keys, vals, &op) != 0) op = nullptr;
  MXSymbolFree(sym);
  return op;
}

// The CachedOp this run of `exe` uses: its parameter CachedOp (Executor::StableParams), or null
// for its own. Called under exe.run_mu, without the GIL.
CachedOpHandle stable_params_op(const Executor& exe, const LaunchArrays& a) {
  Executor::StableParams& s = exe.params;
  if (s.decided && !s.op) return nullptr;
  bool recording = false;
  MXAutogradIsRecording(&recording);
  if (exe.per_op_autograd || recording || !exe.layout_inputs.empty() || !exe.placeholders.empty()) return nullptr;
  const std::vector<NDArrayHandle>& ins = a.ins;
  auto same = [&](size_t i) { return ins[i] == s.last[i] && chunk_ref(ins[i]) == s.chunks[i]; };
  if (!s.decided && ++s.runs >= 2 && s.last.size() == ins.size()) {
    s.decided = true;
    s.stable.assign(ins.size(), 0);
    for (size_t i = 0; i < ins.size(); ++i) {
      // A parameter must be read-only: an input the graph writes in place (an optimizer's state:
      // MXNet then ordered a later graph's read of it before this run's write; fuzz seed 11004645)
      // or into which it writes an output stays a data input.
      const bool written = std::find(a.outs.begin(), a.outs.end(), ins[i]) != a.outs.end() ||
                           (i < exe.input_written.size() && exe.input_written[i]);
      s.stable[i] = same(i) && !written;
      if (!s.stable[i]) s.chunks[i].reset();
    }
    s.op = param_cached_op(exe.json, s.stable);
    if (!s.op) {
      s.last.clear();
      s.chunks.clear();
      return nullptr;
    }
    // The executor's own CachedOp ran once and holds a set of intermediate buffers that the
    // parameter CachedOp allocates again: it is swapped for a fresh one, which allocates only
    // if a run falls back to it (binding given up), so an executor keeps one set. Freeing it
    // while its last run's engine ops are pending is safe: MXNet frees arrays after them.
    if (CachedOpHandle fresh = fresh_static_op(exe.json)) {
      CachedOpHandle used = exe.op;
      exe.op = fresh;
      MXFreeCachedOp(used);
    }
  } else if (!s.decided) {  // the first run: remember every input
    s.chunks.clear();
    for (NDArrayHandle h : ins) s.chunks.push_back(chunk_ref(h));
  } else {
    bool changed = false;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!s.stable[i] || same(i)) continue;
      s.chunks[i] = chunk_ref(ins[i]);
      changed = true;
    }
    if (changed && ++s.misses >= kParamMisses) {  // MXNet binds again each time: give up
      s.op.reset();
      s.last.clear();
      s.chunks.clear();
      return nullptr;
    }
  }
  s.last = ins;
  return s.op.get();
}

}  // namespace

// Whether a run of `exe` may be its kernels launched directly (kernel_launch.h): not while
// recording (MXNet must record the graph as an autograd node). The arrays our kernels write
// (a.ours_write) the launch turns to the default layout itself.
bool launches_kernel(const Executor& exe, const LaunchArrays& a) {
  if (!exe.kernel_launch || !a.direct_kernel) return false;
  bool recording = false;
  MXAutogradIsRecording(&recording);
  return !recording;
}

int invoke_cached_op(const Executor& exe, LaunchArrays& a, CachedOpHandle op) {
  // Without the GIL: the kernel may run here and now, for as long as its work takes.
  a.kernel_launched =
      launches_kernel(exe, a) && without_gil([&] { return launch_kernel(exe.kernel_launch, a.ins, a.outs) ? 1 : 0; });
  if (a.kernel_launched) return 0;
  int nout = static_cast<int>(a.outs.size());
  NDArrayHandle* outp = a.outs.data();
  const int* stypes = nullptr;
  return without_gil([&] {  // a graph holding a Custom op runs it under MXNet's custom-op lock
    std::lock_guard<std::mutex> one_run(exe.run_mu);  // waited for without the GIL: a run may need it
    push_default_layout(a.ours_write);
    if (!op && a.stable_params) op = stable_params_op(exe, a);
    return MXInvokeCachedOpEx(op ? op : exe.op, static_cast<int>(a.ins.size()), a.ins.data(), &nout, &outp, &stypes);
  });
}

void run(Executor& exe, const Trace& trace, const std::vector<OutputSpec>& outputs) {
  LaunchArrays arrays = launch_arrays(exe, trace, outputs);
  AutogradState state(trace.runs_recorded(), trace.training);
  MX_CALL(invoke_cached_op(exe, arrays));
  R->stats.kernels_launched_directly += arrays.kernel_launched;
  ++exe.runs;
}

namespace {

// A backward node replayed: MXAutogradBackwardEx on the replayed heads (recorded just before,
// under autograd), with its head gradients (null: ones). MXNet writes the variables' gradient
// buffers, which the node's outputs are.
void backward_eagerly(const Trace& trace, const Node& n, const std::vector<NDArrayHandle>& handle) {
  const int nh = std::atoi(attr_value(n.attrs, "num_heads", "0").c_str());
  const std::string mask = attr_value(n.attrs, "head_grads", "");
  std::vector<NDArrayHandle> heads, head_grads;
  size_t next = static_cast<size_t>(nh);
  for (int i = 0; i < nh; ++i) {
    heads.push_back(handle[n.in[i]]);
    head_grads.push_back(i < static_cast<int>(mask.size()) && mask[i] == '1' ? handle[n.in[next++]] : nullptr);
  }
  // MXNet's backward marks the variables' gradients fresh. The program's backward() did so when
  // it was called (backward.cc), and what ran since may have cleared the flags (Trainer.step,
  // before the trace it left open ran eagerly): they keep the program's values.
  std::vector<std::pair<NDArrayHandle, int>> fresh;
  for (size_t k = next; k < n.in.size(); ++k) {
    int f = 0;
    if (handle[n.in[k]] && MXNDArrayGetGradState(handle[n.in[k]], &f) == 0) fresh.emplace_back(handle[n.in[k]], f);
  }
  MX_CALL(without_gil([&] {
    return MXAutogradBackwardEx(static_cast<uint32_t>(nh), heads.data(), head_grads.data(), 0, nullptr, 0, 0,
                                trace.training ? 1 : 0, nullptr, nullptr);
  }));
  for (const auto& vf : fresh) MX_CALL(MXNDArraySetGradState(vf.first, vf.second));
}

}  // namespace

std::vector<NDArrayHandle> replay_arrays(const Trace& trace, const std::vector<OutputSpec>& outputs) {
  std::vector<NDArrayHandle> handle(trace.values.size(), nullptr);
  for (size_t v = 0; v < trace.values.size(); ++v)
    if (trace.values[v].node < 0) handle[v] = trace.values[v].ext;
  for (const auto& o : outputs) handle[o.value] = o.handle;
  // A value no output keeps is still written where eager wrote it when a later op writes
  // that array again (nag_mom_update(w, w, m, out=w) with w made in the trace): that op
  // may read its output's memory back, as it does eagerly. So is the dead result of an op
  // kept only because it has effects or can fail (flush.cc hands it a temporary array, one
  // the trace does not know): `w = random.normal(); nag_mom_update(w, w, m, out=w)` reads
  // the new w back (fuzz seed 1152283), and `b = sort(x); b[:] = 1` leaves sort's error on
  // b eagerly, and the write into b is skipped.
  std::unordered_set<NDArrayHandle> written_again, in_trace;
  for (const Node& n : trace.nodes)
    for (NDArrayHandle h : n.targets)
      if (h) written_again.insert(h);
  for (const auto& kv : trace.slots) in_trace.insert(kv.first);
  for (size_t v = 0; v < trace.values.size(); ++v) {
    const Value& val = trace.values[v];
    if (val.node < 0 || !val.home || !written_again.count(val.home) || handle[v] == val.home) continue;
    if (!handle[v] || !in_trace.count(handle[v])) handle[v] = val.home;
  }
  return handle;
}

void run_eagerly(const Trace& trace, const std::vector<OutputSpec>& outputs) {
  std::vector<NDArrayHandle> handle = replay_arrays(trace, outputs);
  std::vector<NDArrayHandle> temps;
  AutogradState state(trace.recording, trace.training);
  std::unique_ptr<AutogradState> after_backward;
  try {
    for (const Node& n : trace.nodes) {
      if (is_backward_node(n)) {  // MXNet's own backward, into the variables' gradient buffers
        backward_eagerly(trace, n, handle);
        // the ops after it (an optimizer update) were recorded with autograd off
        after_backward = std::make_unique<AutogradState>(false, trace.training);
        continue;
      }
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
      // One of our library ops (a lifted optimizer update) run eagerly: MXNet's layout rules
      // for library ops hold here as in a graph (see above). An array left in MKLDNN's
      // layout (a concat's result, updated in place through a view: fuzz seed 79251) made
      // the op fail where eager's multi_sgd_update runs. One engine op per array: a weight
      // holding the error of an op that failed before (a tile) must not pass it to the
      // gradient or the learning rate, which eager's update only reads (fuzz seed 568635).
      if (n.op->ours) {
        std::vector<NDArrayHandle> touched(ins);
        touched.insert(touched.end(), outs.begin(), outs.end());
        push_default_layout(touched, /*separately=*/true);
      }
      int nout = static_cast<int>(outs.size());
      NDArrayHandle* outp = outs.data();
      const int* stypes = nullptr;
      MX_CALL(without_gil([&] {  // a Custom op parses its attributes under MXNet's custom-op lock
        return MXImperativeInvokeEx(n.op->creator, static_cast<int>(ins.size()), ins.data(), &nout, &outp,
                                    static_cast<int>(keys.size()), keys.data(), vals.data(), &stypes);
      }));
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
