#include "failures.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <atomic>
#include <memory>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "executor.h"
#include "nogil.h"
#include "mxapi.h"
#include "mxparse.h"
#include "runtime.h"

namespace minpy {

bool op_can_fail(const std::string& n) {
  // Found by tests/stress/find_runtime_failures.py: these raise at the first read, not when called.
  static const std::unordered_set<std::string> ops = {
      // LAPACK factorisations and solvers (legacy linalg and numpy)
      "_linalg_potrf", "_linalg_potri", "_linalg_gelqf", "_linalg_syevd", "_linalg_inverse", "_linalg_det",
      "_linalg_slogdet", "_npi_cholesky", "_npi_inv", "_npi_solve", "_npi_tensorinv", "_npi_tensorsolve",
      "_npi_eig", "_npi_eigh", "_npi_eigvals", "_npi_eigvalsh", "_npi_svd", "_npi_pinv", "_npi_pinv_scalar_rcond",
      "_npi_lstsq", "_npi_det", "_npi_slogdet", "_npi_matrix_rank", "_npi_matrix_rank_none_tol", "_npi_qr",
      // an index out of bounds: IndexError at the first read
      "gather_nd",
  };
  return ops.count(n) > 0;
}

namespace {

// The integers of a tuple attribute (tile's reps, a reduction's axis).
std::vector<int64_t> int_tuple(const std::vector<Attr>& attrs, const char* key) {
  auto read = [](const char* p, char** end) { return std::strtoll(p, end, 10); };
  return mx_tuple<int64_t>(attr_value(attrs, key, ""), read);
}

// MXNet's BroadcastReduceShapeCompact, counting: the axes left when neighbouring axes that
// are all reduced (big != small) or all kept are merged. Its kernels take at most 5, and
// beyond that fail while they run ("Too many reduction axes"). A kept axis of size 1 is
// neither, so (1,5,2,1) tiled by (2,2,2,2), seen as (2,1,2,5,2,2,2,1) from (1,1,1,5,1,2,1,1),
// has 6 (fuzz seed 404946: merging across the 1 predicted 5).
int merged_axes(const std::vector<int64_t>& big, const std::vector<int64_t>& small) {
  int64_t small_size = 1;
  for (int64_t d : small) small_size *= d;
  if (small_size == 1) return 1;
  int axes = 0;
  int64_t big_run = 1, small_run = 1;
  for (size_t i = 0; i < big.size(); ++i) {
    const bool reduced = big[i] != small[i];
    if ((reduced && small_run > 1) || (!reduced && big_run != small_run)) {
      ++axes;
      big_run = small_run = 1;
    }
    big_run *= big[i];
    if (!reduced) small_run *= big[i];
  }
  if (big_run > 1 || small_run > 1) ++axes;
  return axes;
}

constexpr int kMaxKernelAxes = 5;  // MXNET_SPECIAL_MAX_NDIM, and the slice kernels' NDIM switch

}  // namespace

bool tile_can_fail(const AVal& input, const std::vector<Attr>& attrs) {
  const std::vector<int64_t> reps = int_tuple(attrs, "reps");
  // MXNet pads the shorter of shape and reps with leading ones, then broadcasts the input
  // seen as (1, d0, 1, d1, ...) to (r0, d0, r1, d1, ...).
  const size_t n = std::max(reps.size(), static_cast<size_t>(input.ndim));
  std::vector<int64_t> dims(n, 1), r(n, 1);
  for (int i = 0; i < input.ndim; ++i) dims[n - input.ndim + i] = input.dims[i];
  for (size_t i = 0; i < reps.size(); ++i) r[n - reps.size() + i] = reps[i];
  std::vector<int64_t> big, small;
  for (size_t i = 0; i < n; ++i) {
    big.push_back(r[i]), small.push_back(1);
    big.push_back(dims[i]), small.push_back(dims[i]);
  }
  return merged_axes(big, small) > kMaxKernelAxes;
}

bool reduce_can_fail(const AVal& input, const std::vector<Attr>& attrs) {
  std::vector<int64_t> axes = int_tuple(attrs, "axis");
  if (axes.empty()) return false;  // every axis: one merged axis
  std::vector<char> reduced(input.ndim, 0);
  for (int64_t a : axes) {
    if (a < 0) a += input.ndim;
    if (a >= 0 && a < input.ndim) reduced[a] = 1;
  }
  if (mx_bool(attr_value(attrs, "exclude", "False")))
    for (char& r : reduced) r = !r;
  std::vector<int64_t> big(input.dims, input.dims + input.ndim), small = big;
  for (int i = 0; i < input.ndim; ++i)
    if (reduced[i]) small[i] = 1;
  return merged_axes(big, small) > kMaxKernelAxes;
}

FailRule fail_rule(const std::string& op_name) {
  // Found by tests/stress/find_runtime_failures.py (data variants, and 6 and 7 axes): accepted
  // when called, failing while they run.
  static const std::unordered_map<std::string, FailRule> rules = [] {
    std::unordered_map<std::string, FailRule> m = {{"tile", FailRule::kTile}};
    for (const char* n : {"sum", "mean", "prod", "nansum", "nanprod", "max", "min", "sum_axis", "max_axis",
                          "min_axis", "norm", "_npi_sum", "_npi_mean", "_npi_prod", "_npi_max", "_npi_min",
                          "_np_sum", "_np_max", "_np_min", "_np_prod"})
      m[n] = FailRule::kReduction;
    // x[i] = v, x[a:b] = v: the slice kernels' NDIM switch stops at 5 ("ndim=6too large"); ops
    // written for 4-d images ("dimension do not match")
    for (const char* n : {"_slice_assign_scalar", "_npi_slice_assign_scalar", "_crop_assign_scalar", "_npi_diff",
                          "BatchNorm_v1", "InstanceNorm", "LRN", "GroupNorm", "_contrib_AdaptiveAvgPooling2D",
                          "_contrib_BilinearResize2D"})
      m[n] = FailRule::kOver5Axes;
    // numpy's where broadcasts into at most 5 axes, checked while it runs
    for (const char* n : {"_npi_where", "_npi_where_lscalar", "_npi_where_rscalar"})
      m[n] = FailRule::kAnyInputOver5Axes;
    // oneDNN kernels on CPU ("MKLDNN doesn't support 7 dimensions"), numpy's dot (its transpose:
    // "Transpose support at most 6 dimensions")
    for (const char* n : {"Concat", "concat", "BatchNorm", "_rnn_param_concat", "_contrib_quantize_v2",
                          "_npi_rnn_param_concat", "_npx_batch_norm", "_np_dot"})
      m[n] = FailRule::kAnyInputOver6AxesOnCpu;
    // "This operation does not support float16", raised by the CPU kernel
    for (const char* n : {"sort", "argsort", "_npi_sort", "_npi_argsort"}) m[n] = FailRule::kFloat16SortOnCpu;
    // Found with each enumerated or boolean parameter set to each of its values:
    // take(mode='raise') checks its indices ("take operator contains indices out of bound");
    // norm's out_dtype other than its input's fails reading its output ("TBlob.get_with_shape");
    // amp_cast to or from float64/int64 ("unknown type for MKLDNN"); SoftmaxActivation's
    // channel mode ("Input need to have a least 3 dim").
    m["take"] = FailRule::kModeRaise;
    m["norm"] = FailRule::kNormOutDtype;
    m["amp_cast"] = FailRule::kAmpCastOneDnn;
    m["SoftmaxActivation"] = FailRule::kChannelModeUnder3Axes;
    // random samplers check their parameters while they run ("scale parameter must be positive")
    for (const char* n : {"_random_normal", "_random_exponential", "_random_gamma", "_random_poisson",
                          "_random_negative_binomial", "_random_generalized_negative_binomial", "_random_uniform",
                          "_random_randint", "_random_normal_like", "_random_exponential_like", "_random_gamma_like",
                          "_random_poisson_like", "_random_negative_binomial_like",
                          "_random_generalized_negative_binomial_like", "_random_uniform_like"})
      m[n] = FailRule::kSamplerParams;
    for (const char* n : {"_npi_normal", "_npi_normal_n", "_npi_exponential", "_npi_gamma", "_npi_gumbel",
                          "_npi_logistic", "_npi_rayleigh", "_npi_weibull", "_npi_powerd", "_npi_pareto",
                          "_npi_bernoulli", "_npi_multinomial"})
      m[n] = FailRule::kNumpySamplerParams;
    m["_npi_percentile"] = FailRule::kPercentile;
    return m;
  }();
  auto it = rules.find(op_name);
  return it == rules.end() ? FailRule::kNever : it->second;
}

namespace {

// A sampler's scalar parameters out of the ranges MXNet checks while it runs, judged loosely
// (a value on a boundary some sampler accepts counts as failing: it only runs op by op):
// scales, rates and shapes must be positive, probabilities within [0, 1], low <= high,
// multinomial's pvals sum to at most 1, a percentile within [0, 100].
bool sampler_params_can_fail(const std::vector<Attr>& attrs) {
  auto number = [](const std::string& s, double* v) {
    char* end = nullptr;
    *v = std::strtod(s.c_str(), &end);
    return end != s.c_str() && *end == '\0';  // "(2, 3)" (an output shape) is not one
  };
  double low = 0, high = 0;
  bool has_low = false, has_high = false;
  for (const auto& a : attrs) {
    double v = 0;
    if (a.key == "pvals") {
      auto p = mx_tuple<double>(a.val, [](const char* q, char** end) { return std::strtod(q, end); });
      double head = 0;
      for (size_t i = 0; i + 1 < p.size(); ++i) head += p[i];
      if (head > 1.0 - 1e-9) return true;
      continue;
    }
    if (!number(a.val, &v)) continue;
    const std::string& k = a.key;
    if ((k == "scale" || k == "lam" || k == "alpha" || k == "beta" || k == "a" || k == "shape" || k == "k" ||
         k == "mu") && !(v > 0))
      return true;
    if ((k == "p" || k == "prob") && !(v >= 0 && v <= 1)) return true;
    if (k == "q_scalar" && !(v >= 0 && v <= 100)) return true;
    if (k == "low") has_low = true, low = v;
    if (k == "high") has_high = true, high = v;
  }
  // uniform's low and high default to 0 and 1 (randint's are required)
  return (has_low || has_high) && (has_high ? high : 1.0) < (has_low ? low : 0.0);
}

}  // namespace

bool call_can_fail(FailRule rule, const std::vector<const AVal*>& inputs, const std::vector<Attr>& attrs) {
  auto any_input = [&](int max_axes, bool cpu_only) {
    for (const AVal* a : inputs)
      if (a->ndim > max_axes && !(cpu_only && a->dev_type == kGPU)) return true;
    return false;
  };
  switch (rule) {
    case FailRule::kNever: return false;
    case FailRule::kModeRaise: return attr_value(attrs, "mode", "clip") == "raise";
    case FailRule::kSamplerParams: return sampler_params_can_fail(attrs);
    // an array of parameters is checked on its values
    case FailRule::kNumpySamplerParams: return !inputs.empty() || sampler_params_can_fail(attrs);
    case FailRule::kPercentile: return inputs.size() > 1 || sampler_params_can_fail(attrs);  // q as an array
    case FailRule::kAnyInputOver5Axes: return any_input(kMaxKernelAxes, false);
    case FailRule::kAnyInputOver6AxesOnCpu: return any_input(6, true);
    default: break;
  }
  if (inputs.size() != 1) return false;
  const AVal& in = *inputs[0];
  switch (rule) {
    case FailRule::kTile: return tile_can_fail(in, attrs);
    case FailRule::kReduction: return reduce_can_fail(in, attrs);
    case FailRule::kOver5Axes: return in.ndim > kMaxKernelAxes;
    case FailRule::kFloat16SortOnCpu: return in.dtype == 2 /* float16 */ && in.dev_type != kGPU;
    case FailRule::kChannelModeUnder3Axes: return in.ndim < 3 && attr_value(attrs, "mode", "instance") == "channel";
    case FailRule::kNormOutDtype: {
      std::string out = attr_value(attrs, "out_dtype", "None");
      return out != "None" && out != dtype_name(in.dtype);
    }
    case FailRule::kAmpCastOneDnn: {
      // measured on CPU (both dtypes of every pair): a float64 or int64 input fails, and so does
      // float32 cast to either; float16 and the small integer types take another kernel
      if (in.dev_type == kGPU) return false;
      std::string to = attr_value(attrs, "dtype", "");
      bool wide_to = to == "float64" || to == "int64";
      return in.dtype == 1 || in.dtype == 6 || (in.dtype == 0 && wide_to);
    }
    default: return false;
  }
}

namespace {

// Storage chunks of recent onednn_concat_call results: a ring of the last kConcatResults.
constexpr size_t kConcatResults = 256;
struct ConcatResults {
  std::vector<const void*> ring = std::vector<const void*>(kConcatResults, nullptr);
  std::unordered_multiset<const void*> chunks;
  size_t next = 0;
};
ConcatResults& concat_results() {
  static ConcatResults* c = new ConcatResults();
  return *c;
}

}  // namespace

void note_onednn_concat_result(NDArrayHandle h) {
  const void* chunk = h ? chunk_of(h) : nullptr;
  if (!chunk) return;
  ConcatResults& c = concat_results();
  if (c.ring[c.next]) c.chunks.erase(c.chunks.find(c.ring[c.next]));
  c.ring[c.next] = chunk;
  c.chunks.insert(chunk);
  c.next = (c.next + 1) % kConcatResults;
}

bool may_be_onednn_concat_result(NDArrayHandle h) {
  const ConcatResults& c = concat_results();
  return h && !c.chunks.empty() && c.chunks.count(chunk_of(h)) > 0;
}

namespace {

// A 2-d concat along axis 1 (the parts' shapes decide whether oneDNN leaves its layout).
bool onednn_concat_call(const Trace& t, const std::string& op_name, const std::vector<Attr>& attrs,
                        const std::vector<int>& in) {
  const bool np = op_name == "_npi_concatenate";
  if (!np && op_name != "concat" && op_name != "Concat") return false;
  if (in.size() < 2 || t.values[in[0]].aval.ndim != 2 || t.values[in[0]].aval.dev_type == kGPU) return false;
  const std::string dim = attr_value(attrs, np ? "axis" : "dim", np ? "0" : "1");
  return dim == "1" || dim == "-1";
}

// Whether value v may be a oneDNN-layout concat result: made by such a concat, through
// Activations (oneDNN's keeps its input's layout), or an array remembered as one.
bool onednn_concat_value(const Trace& t, int v) {
  while (t.values[v].node >= 0) {
    const Node& n = t.nodes[t.values[v].node];
    if (n.op->name == "Activation" && !n.in.empty()) {
      v = n.in[0];
      continue;
    }
    return onednn_concat_call(t, n.op->name, n.attrs, n.in);
  }
  return may_be_onednn_concat_result(t.values[v].ext);
}

}  // namespace

bool makes_onednn_concat_result(const Trace& t, const std::string& op_name, const std::vector<Attr>& attrs,
                                const std::vector<int>& in) {
  if (op_name == "Activation") return !in.empty() && t.values[in[0]].aval.ndim == 2 && onednn_concat_value(t, in[0]);
  return onednn_concat_call(t, op_name, attrs, in);
}

bool batch_norm_backward_can_fail(const Trace& t, const std::string& op_name, int data) {
  if (!t.recording || (op_name != "BatchNorm" && op_name != "_npx_batch_norm")) return false;
  const AVal& a = t.values[data].aval;
  return a.ndim == 2 && a.dev_type != kGPU && onednn_concat_value(t, data);
}

bool view_input_can_fail(const std::string& op_name, int input) {
  return op_name == "_copyto" || op_name == "RNN" || (op_name == "Deconvolution" && input == 1);
}

OpInfo& failing_twin(const OpInfo& op) {
  static std::unordered_map<const OpInfo*, std::unique_ptr<OpInfo>> twins;
  auto& twin = twins[&op];
  if (!twin) {
    twin = std::make_unique<OpInfo>(op);
    twin->can_fail = true;
  }
  return *twin;
}

bool errors_are_synchronous() {
  static const bool naive = [] {
    const char* e = std::getenv("MXNET_ENGINE_TYPE");
    return e && std::strstr(e, "Naive") != nullptr;
  }();
  return naive;
}

namespace {

// One probe: an engine op reading the suspect arrays. MXNet skips an op whose inputs hold an
// error (without consuming it) and destroys its closure either way, so: ran && done = clean.
struct ProbeFlags {
  std::atomic<bool> ran{false}, done{false};
};

void probe_ran(void* /*run_context*/, void* param) { static_cast<ProbeFlags*>(param)->ran.store(true); }
void probe_done(void* param) { static_cast<ProbeFlags*>(param)->done.store(true); }

struct Suspect {
  ProbeFlags* probe = nullptr;  // the latest probe over it; null: none pending (probe when used)
  NDArrayHandle hold = nullptr;  // a view keeping the storage alive, so its address names no other array
};

struct Suspects {
  // storage chunk (shared by every view of an array) -> what is known about it
  std::unordered_map<const void*, Suspect> chunks;

  void add(NDArrayHandle h, ProbeFlags* probe) {
    Suspect& s = chunks[chunk_of(h)];
    s.probe = probe;
    if (!s.hold && MXShallowCopyNDArray(h, &s.hold) != 0) s.hold = nullptr;
  }
  std::vector<ProbeFlags*> probes;  // pending or finished, not yet collected
  // Gradient buffers (owned handles) of the variables recorded per-op runs read, to probe after
  // the next backward() (probe_gradients_after_backward).
  std::vector<NDArrayHandle> gradients;
  std::unordered_set<const void*> gradient_chunks;  // theirs: each buffer once, however many runs

  // Forgets the arrays whose latest probe ran (it runs only if no error is there); frees
  // the probes MXNet is done with (after that it touches none).
  void collect() {
    if (probes.empty()) return;
    std::unordered_set<ProbeFlags*> clean, failed;
    for (ProbeFlags* p : probes) {
      if (p->ran.load()) clean.insert(p);
      else if (p->done.load()) failed.insert(p);
    }
    if (clean.empty() && failed.empty()) return;
    for (auto it = chunks.begin(); it != chunks.end();) {
      if (clean.count(it->second.probe)) {
        if (it->second.hold) MXNDArrayFree(it->second.hold);
        it = chunks.erase(it);
        continue;
      }
      if (failed.count(it->second.probe)) it->second.probe = nullptr;  // an error was there: probe again when used
      ++it;
    }
    std::vector<ProbeFlags*> pending;
    for (ProbeFlags* p : probes) {
      if (p->done.load()) delete p;
      else pending.push_back(p);
    }
    probes.swap(pending);
  }

  bool has(NDArrayHandle h) const { return chunks.count(chunk_of(h)) > 0; }

  // Pushes one probe per context over the arrays; they are suspects until it runs.
  void probe(const std::vector<NDArrayHandle>& arrays) {
    std::unordered_map<uint64_t, std::vector<NDArrayHandle>> by_ctx;
    std::unordered_set<const void*> seen;  // views share their storage: MXNet refuses a variable twice
    for (NDArrayHandle h : arrays) {
      if (!seen.insert(chunk_of(h)).second) continue;
      int dev_type = 1, dev_id = 0;
      if (MXNDArrayGetContext(h, &dev_type, &dev_id) != 0) continue;
      by_ctx[static_cast<uint64_t>(dev_type) << 32 | static_cast<uint32_t>(dev_id)].push_back(h);
    }
    for (auto& kv : by_ctx) {
      struct {
        int32_t dev_type, dev_id;  // mxnet::Context
      } ctx{static_cast<int32_t>(kv.first >> 32), static_cast<int32_t>(kv.first & 0xffffffffu)};
      auto* flags = new ProbeFlags();
      std::vector<NDArrayHandle>& hs = kv.second;
      if (MXEnginePushSyncND(probe_ran, flags, probe_done, &ctx, hs.data(), static_cast<int>(hs.size()), nullptr, 0,
                             nullptr, 0, "minpy_jit_probe") != 0) {
        delete flags;  // not pushed: the arrays stay suspects with no probe (probed again when used)
        for (NDArrayHandle h : hs) add(h, nullptr);
        continue;
      }
      probes.push_back(flags);
      for (NDArrayHandle h : hs) add(h, flags);
    }
  }
};

Suspects& suspects() {
  static Suspects* s = new Suspects();  // never destroyed: the engine may finish a probe at exit
  return *s;
}

// Forward closure of failure over the trace, in program order (every way an error travels
// in MXNet's engine points forward): a node is reached when it can fail, reads a value a
// reached node produced, or reads or writes a suspect array. `first` is the first node
// reached and `why` its reason.
std::vector<char> reached_nodes(const Trace& t, const std::vector<OutputSpec>& outputs, int* first,
                                std::string* why) {
  const Suspects& s = suspects();
  const bool any_suspect = !s.chunks.empty();
  std::vector<char> reached(t.nodes.size(), 0), tainted(t.values.size(), 0), writes_suspect(t.values.size(), 0);
  if (any_suspect) {
    for (size_t v = 0; v < t.values.size(); ++v)
      if (t.values[v].node < 0 && t.values[v].ext && s.has(t.values[v].ext)) tainted[v] = 1;
    for (const auto& o : outputs)
      if (s.has(o.handle)) writes_suspect[o.value] = 1;
  }
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    const char* cause = n.op->can_fail ? "can fail while it runs" : nullptr;
    bool hit = cause != nullptr;
    for (int v : n.in) {
      if (!tainted[v]) continue;
      hit = true;
      if (!cause && t.values[v].node < 0) cause = "reads an array an earlier op may have failed to compute";
    }
    for (size_t k = 0; k < n.out.size(); ++k) {
      const bool into_suspect = (k < n.targets.size() && n.targets[k] && any_suspect && s.has(n.targets[k])) ||
                                writes_suspect[n.out[k]];
      if (!into_suspect) continue;
      hit = true;
      if (!cause) cause = "writes an array an earlier op may have failed to compute";
    }
    if (!hit) continue;
    reached[i] = 1;
    for (int v : n.out) tainted[v] = 1;
    for (int v : n.mutated) tainted[v] = 1;
    if (*first < 0) {
      *first = static_cast<int>(i);
      *why = cause ? cause : "";
    }
  }
  return reached;
}

}  // namespace

std::string needs_per_op_run(const Trace& t, const std::vector<OutputSpec>& outputs) {
  Suspects& s = suspects();
  s.collect();
  if (!t.can_fail && s.chunks.empty()) return "";
  int first = -1;
  std::string why;
  reached_nodes(t, outputs, &first, &why);
  if (first < 0) return "";
  const std::string& op = t.nodes[first].op->name;
  ++R->stats.fallbacks[op];
  ++R->stats.fallback_reasons[op + ": " + why + " (its trace ran op by op)"];
  return op + " " + why;
}

void note_per_op_run(const Trace& t, const std::vector<OutputSpec>& outputs) {
  int first = -1;
  std::string why;
  std::vector<char> reached = reached_nodes(t, outputs, &first, &why);
  if (first < 0) return;
  // The arrays the reached nodes wrote: their out= targets, the trace outputs holding their
  // values, and the inputs they update in place. Temporaries are gone already.
  std::vector<char> reached_value(t.values.size(), 0);
  std::vector<NDArrayHandle> arrays;
  const std::vector<NDArrayHandle> written = replay_arrays(t, outputs);  // where the run wrote each value
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (!reached[i]) continue;
    const Node& n = t.nodes[i];
    for (int v : n.out) {
      reached_value[v] = 1;
      if (written[v] && t.values[v].home == written[v]) arrays.push_back(written[v]);  // a dead result's array
    }
    for (NDArrayHandle h : n.targets)
      if (h) arrays.push_back(h);
    for (int v : n.mutated)
      if (t.values[v].ext) arrays.push_back(t.values[v].ext);
  }
  for (const auto& o : outputs)
    if (reached_value[o.value]) arrays.push_back(o.handle);
  // Suspects this trace only read whose last probe found an error: probe them again (the
  // error may have been read since, which clears it).
  Suspects& s = suspects();
  // Recorded under autograd: a backward over these ops may fail too (or read what failed), so
  // the variables' gradient buffers are probed after the next backward().
  if (t.recording) watch_input_gradients(t);
  for (const Value& v : t.values) {
    if (v.node >= 0 || !v.ext) continue;
    auto it = s.chunks.find(chunk_of(v.ext));
    if (it != s.chunks.end() && !it->second.probe) arrays.push_back(v.ext);
  }
  s.probe(arrays);
}

void probe_arrays(const std::vector<NDArrayHandle>& arrays) {
  if (!arrays.empty()) suspects().probe(arrays);
}

void watch_gradients(const std::vector<NDArrayHandle>& arrays) {
  Suspects& s = suspects();
  for (NDArrayHandle h : arrays) {
    NDArrayHandle g = nullptr;
    if (!h || MXNDArrayGetGrad(h, &g) != 0 || !g) continue;
    if (s.gradient_chunks.insert(chunk_of(g)).second) s.gradients.push_back(g);
    else MXNDArrayFree(g);
  }
}

void watch_input_gradients(const Trace& t) {
  std::vector<NDArrayHandle> externals;
  for (const Value& v : t.values)
    if (v.node < 0 && v.ext) externals.push_back(v.ext);
  watch_gradients(externals);
}

void probe_gradients_after_backward() {
  Suspects& s = suspects();
  if (s.gradients.empty()) return;
  std::vector<NDArrayHandle> grads;
  grads.swap(s.gradients);
  s.gradient_chunks.clear();
  s.probe(grads);  // they hold their own views now
  for (NDArrayHandle g : grads) MXNDArrayFree(g);
}

bool any_suspect(const std::vector<NDArrayHandle>& arrays) {
  Suspects& s = suspects();
  if (s.chunks.empty()) return false;
  s.collect();
  for (NDArrayHandle h : arrays)
    if (h && s.has(h)) return true;
  return false;
}

bool errors_may_be_pending() {
  Suspects& s = suspects();
  if (s.chunks.empty()) return false;
  s.collect();
  std::vector<NDArrayHandle> unprobed;  // their last probe found an error: it may have been read since
  for (const auto& kv : s.chunks)
    if (!kv.second.probe && kv.second.hold) unprobed.push_back(kv.second.hold);
  if (!unprobed.empty()) s.probe(unprobed);
  // Wait for the probes (each runs once the arrays' pending work is done), up to a second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  auto all_done = [&s] {
    return std::all_of(s.probes.begin(), s.probes.end(), [](ProbeFlags* p) { return p->done.load(); });
  };
  while (!all_done() && std::chrono::steady_clock::now() < deadline) {
    without_gil([] {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      return 0;
    });
  }
  s.collect();
  return !s.chunks.empty();
}

size_t suspect_count() {
  suspects().collect();
  return suspects().chunks.size();
}

}  // namespace minpy
