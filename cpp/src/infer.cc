#include "infer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "failures.h"
#include "mxapi.h"
#include "nogil.h"

namespace minpy {

namespace {

// Frees the symbols of one inference call whatever happens.
struct SymbolGuard {
  std::vector<SymbolHandle> held;
  ~SymbolGuard() {
    for (auto s : held) MXSymbolFree(s);
  }
};

// MXNet's check message as eager code shows it: MXGetLastError after a symbolic inference
// reads "MXNetError: Error in operator : [12:34:56] ../src/x.h:67: Check failed: ...";
// eager errors end with "Check failed: ..." alone. The wrapping is dropped.
std::string check_message(std::string msg) {
  auto drop_prefix = [&msg](const std::string& prefix) {
    if (msg.compare(0, prefix.size(), prefix) == 0) msg.erase(0, prefix.size());
  };
  // MXGetLastError ends a C++ error with MXNet's stack ("\nStack trace:\n  File ..."), which
  // Python's MXNetError moves before the message: eager's message ends with the check.
  auto stack = msg.find("\nStack trace:");
  if (stack != std::string::npos) msg.erase(stack);
  auto last = msg.rfind("MXNetError: ");
  if (last != std::string::npos) msg.erase(0, last + 12);
  if (msg.compare(0, 18, "Error in operator ") == 0) {
    auto colon = msg.find(": ");
    if (colon != std::string::npos) msg.erase(0, colon + 2);
  }
  // "[hh:mm:ss] <file>:<line>: " -- a log stamp and MXNet's source position
  if (msg.size() > 11 && msg[0] == '[' && msg[9] == ']' && msg[10] == ' ') {
    auto pos = msg.find(": ", 11);
    auto space = msg.find(' ', 11);
    if (pos != std::string::npos && space == pos + 1) msg.erase(0, pos + 2);
  }
  drop_prefix("MXNetError: ");
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return msg;
}

// A failed inference call: MXNet's message without the C API call around it.
void infer_check(int rc) {
  if (rc != 0) throw MXError(MXGetLastError());
}

std::string describe_inputs(const std::vector<const AVal*>& ins) {
  std::string s;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (i) s += ", ";
    s += "input " + std::to_string(i) + " " + ins[i]->shape_str() + " " + dtype_name(ins[i]->dtype);
  }
  return s.empty() ? "no array inputs" : s;
}

// The inputs an op takes with these attributes (arguments and auxiliary states), as eager MXNet
// counts them before anything else; -1 if unknown. Composed without inputs, the symbol makes a
// variable for each (listing an uncomposed atomic symbol's arguments crashes in nnvm).
int input_count(const OpInfo& op, std::vector<const char*> keys, std::vector<const char*> vals) {
  SymbolGuard guard;
  SymbolHandle sym = nullptr;
  if (without_gil([&] {
        return MXSymbolCreateAtomicSymbol(op.creator, static_cast<uint32_t>(keys.size()), keys.data(), vals.data(),
                                          &sym);
      }) != 0)
    return -1;
  guard.held.push_back(sym);
  uint32_t n_args = 0, n_aux = 0;
  const char** names = nullptr;
  if (MXSymbolCompose(sym, "", 0, nullptr, nullptr) != 0 || MXSymbolListArguments(sym, &n_args, &names) != 0 ||
      MXSymbolListAuxiliaryStates(sym, &n_aux, &names) != 0)
    return -1;
  return static_cast<int>(n_args + n_aux);
}

// Eager MXNet's message for a call with another number of inputs (Imperative::Invoke).
std::string input_count_message(const std::string& op, int given, int expected) {
  const std::string g = std::to_string(given), e = std::to_string(expected);
  return "Check failed: num_inputs == infered_num_inputs (" + g + " vs. " + e + ") : Operator " + op + " expects " +
         e + " inputs, but got " + g + " instead.";
}

}  // namespace

void parse_ctx_attr(const std::vector<Attr>& attrs, int* dev_type, int* dev_id) {
  *dev_type = 1;
  *dev_id = 0;
  for (const auto& a : attrs) {
    if (a.key != "ctx") continue;
    const std::string& v = a.val;
    int id = 0;
    auto lp = v.find('(');
    if (lp != std::string::npos) id = std::atoi(v.c_str() + lp + 1);
    std::string t = v.substr(0, lp);
    *dev_type = t == "gpu" ? 2 : t == "cpu_pinned" ? 3 : t == "cpu_shared" ? 5 : 1;
    *dev_id = id;
  }
}

namespace {

bool where_condition_fits(const AVal& cond, const AVal& data) {
  if (cond.ndim == data.ndim) return std::equal(cond.dims, cond.dims + cond.ndim, data.dims);
  return cond.ndim == 1 && data.ndim >= 1 && cond.dims[0] == data.dims[0];
}

// Ops whose trial run would change what the program sees: random draws (the trial would take
// numbers from the generator eager code takes them from), side effects, our own kernels, and
// ops already recorded as ops that can fail.
bool skips_trial(const OpInfo& op) {
  if (op.effectful || op.can_fail || op.ours || op.update || op.no_symbolic_form) return true;
  static const char* const draws[] = {"bernoulli", "choice", "exponential", "gamma", "gumbel", "logistic",
                                      "multinomial", "normal", "pareto", "powerd", "rayleigh", "shuffle",
                                      "uniform", "weibull", "laplace", "dropout", "randint", "poisson"};
  if (op.name.rfind("_np", 0) == 0)
    for (const char* d : draws)
      if (op.name.find(d) != std::string::npos) return true;
  return false;
}

constexpr size_t kTrialMaxBytes = 16u << 20;  // inputs and results together; larger calls skip it

size_t bytes_of(const AVal& a) { return static_cast<size_t>(a.size()) * dtype_bytes(a.dtype); }

// The bytes of n ones of an mshadow dtype (false for a dtype it does not know). Ones, not
// zeros: an integer division or modulo by a zero input would kill the process (SIGFPE) where
// the user's data may hold no zero.
bool ones(int dtype, size_t n, std::vector<char>* out) {
  auto fill = [&](const void* one, size_t size) {
    out->resize(n * size);
    for (size_t i = 0; i < n; ++i) std::memcpy(out->data() + i * size, one, size);
  };
  const float f32 = 1.0f;
  const double f64 = 1.0;
  const uint16_t f16 = 0x3C00;  // IEEE half 1.0
  const int32_t i32 = 1;
  const int64_t i64 = 1;
  const uint8_t i8 = 1;
  switch (dtype) {
    case 0: fill(&f32, 4); return true;
    case 1: fill(&f64, 8); return true;
    case 2: fill(&f16, 2); return true;
    case 3: case 5: case 7: fill(&i8, 1); return true;
    case 4: fill(&i32, 4); return true;
    case 6: fill(&i64, 8); return true;
    default: return false;
  }
}

enum class Trial { kSkipped, kDeferred, kRuns, kRefusedAtCall, kFailsWhileRunning, kRunsEagerly };

// Runs the op once, as eager code would, on stand-ins of its inputs filled with ones (same shapes,
// dtypes and context), and reads its results. Symbolic inference does not see everything eager
// MXNet checks: a shape or type function that refuses its inputs by returning false reads as
// "not known yet" there (where's condition, pick's index, ...), and eager raises when called
// ("Operator X inferring shapes failed"); and some kernels check their inputs' dtypes or rank
// only while they run (Activation of int32: "This operation only support floating point
// types"; a 7-axis Reshape under oneDNN), which in a compiled graph left its later results
// unwritten, with no error. Once per signature (cached with it).
Trial trial_run(const OpInfo& op, std::vector<const char*> keys, std::vector<const char*> vals,
                const std::vector<const AVal*>& ins, const std::vector<AVal>& outs, bool np_shape,
                bool draws_nothing, std::string* message) {
  if (ins.empty()) return Trial::kSkipped;
  if (skips_trial(op) && !draws_nothing) {
    // A random op is not tried (it would take numbers from the generator). Given a zero-size
    // array, MXNet's samplers fail while they run; *_like draws, Dropout and multinomial given
    // an integer array fail while they run or when called ("only support floating point
    // types"; bad_input_sweep.py; the other samplers take integer parameter arrays). Such a
    // call runs eagerly where it is made.
    const bool draws = op.effectful && !op.can_fail && !op.ours && !op.update;
    const std::string& n = op.name;
    const bool wants_float = (n.size() > 5 && n.compare(n.size() - 5, 5, "_like") == 0) || n == "Dropout" ||
                             n == "_npx_dropout" || n == "_sample_multinomial";
    for (const AVal* a : ins)
      if (draws && (a->size() == 0 || (wants_float && a->dtype > 2))) return Trial::kRunsEagerly;
    return Trial::kSkipped;
  }
  size_t total = 0;
  for (const AVal* a : ins) {
    if (a->ndim == 0 && !np_shape) return Trial::kSkipped;
    total += bytes_of(*a);
  }
  for (const AVal& o : outs) total += bytes_of(o);
  if (total > kTrialMaxBytes) return Trial::kSkipped;
  if (errors_may_be_pending()) return Trial::kDeferred;

  OwnedArrays owned;  // every input and result, freed on return
  std::vector<NDArrayHandle>& held = owned.handles;
  std::vector<NDArrayHandle> inputs;
  std::vector<char> data;
  for (const AVal* a : ins)
    if (!ones(a->dtype, 0, &data)) return Trial::kSkipped;
  for (const AVal* a : ins) {
    std::vector<uint32_t> shape(a->dims, a->dims + a->ndim);
    NDArrayHandle h = nullptr;
    if (MXNDArrayCreateEx(shape.data(), static_cast<uint32_t>(shape.size()), a->dev_type, a->dev_id, 0, a->dtype,
                          &h) != 0)
      return Trial::kSkipped;
    held.push_back(h);
    inputs.push_back(h);
    if (a->size() == 0) continue;
    ones(a->dtype, static_cast<size_t>(a->size()), &data);
    if (without_gil([&] { return MXNDArraySyncCopyFromCPU(h, data.data(), static_cast<size_t>(a->size())); }) != 0)
      return Trial::kSkipped;
  }
  RecordingPaused paused;  // not an op of the user's autograd graph
  int n_out = 0;
  NDArrayHandle* results = nullptr;
  std::vector<NDArrayHandle> out_handles;
  const int rc = without_gil([&] {
    int r = MXImperativeInvoke(op.creator, static_cast<int>(inputs.size()), inputs.data(), &n_out, &results,
                               static_cast<int>(keys.size()), keys.data(), vals.data());
    if (r == 0) out_handles.assign(results, results + n_out);  // MXNet's thread-local list: copied at once
    return r;
  });
  if (rc != 0) {
    *message = MXGetLastError();
    return Trial::kRefusedAtCall;
  }
  held.insert(held.end(), out_handles.begin(), out_handles.end());
  Trial verdict = Trial::kRuns;
  // Every result and input is waited for: reading an error clears it in MXNet, so none is left
  // for nd.waitall() or for ops sharing the failed one's workspace.
  for (NDArrayHandle h : held) {
    if (without_gil([&] { return MXNDArrayWaitToRead(h); }) != 0 && verdict == Trial::kRuns) {
      *message = MXGetLastError();
      verdict = Trial::kFailsWhileRunning;
    }
  }
  return verdict;
}

}  // namespace

const OpSignature& SignatureCache::lookup(const OpInfo& op, const std::vector<Attr>& attrs, uint64_t attr_hash,
                                          const std::vector<const AVal*>& ins, bool np_shape) {
  uint64_t h = mix64(op.hash ^ attr_hash);
  for (const AVal* a : ins) h = mix64(h ^ hash_aval(*a));
  h = mix64(h ^ (np_shape ? 0x77 : 0x11) ^ (ins.size() << 20));
  auto it = cache_.find(h);
  if (it != cache_.end()) {
    if (it->second->untried && !errors_may_be_pending()) {
      OpSignature* sig = it->second.get();
      try {
        try_op(op, attrs, ins, np_shape, sig);
      } catch (...) {
        cache_.erase(h);  // refused: every call of it raises, as eagerly
        throw;
      }
    }
    return *it->second;
  }
  ++inferences;
  auto sig = std::make_unique<OpSignature>(infer(op, attrs, ins, np_shape));
  // Shapes that change at every step would grow the cache without end: past kMaxEntries it
  // starts over (a repeat costs one inference again). No caller holds an earlier answer here.
  if (cache_.size() >= kMaxEntries) cache_.clear();
  // Another thread may have answered the same signature while a trial run (below) waited
  // without the GIL: its answer stays, since that thread may hold it.
  return *cache_.emplace(h, std::move(sig)).first->second;
}

OpSignature SignatureCache::infer(const OpInfo& op, const std::vector<Attr>& attrs,
                                  const std::vector<const AVal*>& ins, bool np_shape) {
  OpSignature sig;
  for (const AVal* a : ins) {
    if (a->dev_type != ins[0]->dev_type || a->dev_id != ins[0]->dev_id) {
      sig.recordable = false;
      sig.why_not = "inputs on different contexts";
      return sig;
    }
  }
  SymbolGuard guard;
  std::vector<const char*> keys, vals;
  for (const auto& a : attrs) {
    keys.push_back(a.key.c_str());
    vals.push_back(a.val.c_str());
  }
  SymbolHandle sym = nullptr;
  try {
    infer_check(without_gil([&] {  // a Custom op parses its attributes under MXNet's custom-op lock
      return MXSymbolCreateAtomicSymbol(op.creator, static_cast<uint32_t>(keys.size()), keys.data(), vals.data(),
                                        &sym);
    }));
    guard.held.push_back(sym);
    std::vector<std::string> names;
    std::vector<SymbolHandle> vars;
    for (size_t i = 0; i < ins.size(); ++i) {
      names.push_back("a" + std::to_string(i));
      SymbolHandle v = nullptr;
      infer_check(MXSymbolCreateVariable(names.back().c_str(), &v));
      guard.held.push_back(v);
      vars.push_back(v);
    }
    // Unnamed, as eager's nodes are: MXNet's check messages quote the node name.
    if (!ins.empty()) infer_check(MXSymbolCompose(sym, "", static_cast<uint32_t>(vars.size()), nullptr, vars.data()));

    std::vector<const char*> name_ptrs;
    std::vector<uint32_t> ind{0};
    std::vector<int> shape_data;
    std::vector<int> type_data;
    for (size_t i = 0; i < ins.size(); ++i) {
      name_ptrs.push_back(names[i].c_str());
      for (int d = 0; d < ins[i]->ndim; ++d) shape_data.push_back(static_cast<int>(ins[i]->dims[d]));
      ind.push_back(static_cast<uint32_t>(shape_data.size()));
      type_data.push_back(ins[i]->dtype);
    }
    uint32_t in_n = 0, out_n = 0, aux_n = 0;
    const int *in_nd = nullptr, *out_nd = nullptr, *aux_nd = nullptr;
    const int **in_d = nullptr, **out_d = nullptr, **aux_d = nullptr;
    int complete = 0;
    infer_check(MXSymbolInferShapeEx(sym, static_cast<uint32_t>(ins.size()), name_ptrs.data(), ind.data(),
                                 shape_data.data(), &in_n, &in_nd, &in_d, &out_n, &out_nd, &out_d, &aux_n, &aux_nd,
                                 &aux_d, &complete));
    if (!complete) {
      sig.recordable = false;
      sig.why_not = "output shape depends on data";
      return sig;
    }
    // A shape function refuses its inputs by returning false: eager MXNet raises ("Operator
    // where inferring shapes failed."), but the symbolic pass reads false as "not known yet" and
    // completes once every shape is set. where's condition must have the data's shape, or be a
    // 1-d selector of its first axis (WhereOpShape); recorded otherwise, its kernel died of
    // SIGFPE when it ran.
    if (op.name == "where" && ins.size() == 3 && !where_condition_fits(*ins[0], *ins[1]))
      throw MXError("Operator where inferring shapes failed: the condition's shape " + ins[0]->shape_str() +
                    " is neither the data's " + ins[1]->shape_str() + " nor its first axis");
    sig.outs.resize(out_n);
    for (uint32_t o = 0; o < out_n; ++o) {
      if (out_nd[o] > AVal::kMaxDim || out_nd[o] < 0) {
        sig.recordable = false;
        sig.why_not = "output rank not supported";
        return sig;
      }
      // Under legacy shape semantics a 0-d shape is also how "unknown" reads: eager MXNet settles
      // such a result (contrib.allclose's uint8 scalar) only when the op runs.
      if (out_nd[o] == 0 && !np_shape) {
        sig.recordable = false;
        sig.why_not = "0-d result under legacy shape semantics (settled when the op runs)";
        return sig;
      }
      sig.outs[o].ndim = out_nd[o];
      for (int d = 0; d < out_nd[o]; ++d) sig.outs[o].dims[d] = out_d[o][d];
    }
    uint32_t tin = 0, tout = 0, taux = 0;
    const int *tin_d = nullptr, *tout_d = nullptr, *taux_d = nullptr;
    infer_check(MXSymbolInferType(sym, static_cast<uint32_t>(ins.size()), name_ptrs.data(), type_data.data(), &tin,
                              &tin_d, &tout, &tout_d, &taux, &taux_d, &complete));
    if (!complete || tout != out_n) {
      sig.recordable = false;
      sig.why_not = "output dtype depends on data";
      return sig;
    }
    int dev_type = 1, dev_id = 0;
    if (!ins.empty()) {
      // MXNet runs an op on its first input's context; pinned and shared host memory do not
      // propagate (imperative_utils.h GetContext): their results are on cpu(dev_id).
      dev_type = ins[0]->dev_type == kCPUPinned || ins[0]->dev_type == kCPUShared ? kCPU : ins[0]->dev_type;
      dev_id = ins[0]->dev_id;
    } else {
      parse_ctx_attr(attrs, &dev_type, &dev_id);
    }
    for (uint32_t o = 0; o < out_n; ++o) {
      sig.outs[o].dtype = tout_d[o];
      sig.outs[o].dev_type = dev_type;
      sig.outs[o].dev_id = dev_id;
    }
    uint32_t naux = 0;
    const char** aux_names = nullptr;
    infer_check(MXSymbolListAuxiliaryStates(sym, &naux, &aux_names));
    for (uint32_t i = 0; i < naux; ++i) {
      std::string n = aux_names[i];
      if (n.size() > 1 && n[0] == 'a') sig.mutable_inputs.push_back(std::atoi(n.c_str() + 1));
    }
  } catch (const MXError& e) {
    // Eager MXNet checks the input count first, in its own words; composing the symbol would
    // complain otherwise ("Incorrect number of arguments", or a shape mismatch further on).
    const int expected = op.name == "reset_arrays" ? -1 : input_count(op, keys, vals);  // composing it crashes
    const std::string why = expected >= 0 && expected != static_cast<int>(ins.size())
                                ? input_count_message(op.name, static_cast<int>(ins.size()), expected)
                                : check_message(e.what());
    throw OpInputError("operator '" + op.name + "' rejected its inputs (" + describe_inputs(ins) + "): " + why);
  }
  try_op(op, attrs, ins, np_shape, &sig);
  return sig;
}

void SignatureCache::try_op(const OpInfo& op, const std::vector<Attr>& attrs, const std::vector<const AVal*>& ins,
                            bool np_shape, OpSignature* sig) {
  if (!sig->recordable) return;
  std::vector<const char*> keys, vals;
  for (const auto& a : attrs) {
    keys.push_back(a.key.c_str());
    vals.push_back(a.val.c_str());
  }
  // RNN counts as a random op for its dropout between layers (`p`); without it, it draws
  // nothing, and a bad state_size or num_layers fails while it runs (bad_input_sweep.py).
  const bool draws_nothing = op.name == "RNN" && std::strtod(attr_value(attrs, "p", "0").c_str(), nullptr) == 0.0;
  std::string failure;
  const Trial trial = trial_run(op, keys, vals, ins, sig->outs, np_shape, draws_nothing, &failure);
  if (trial == Trial::kRunsEagerly) {
    sig->recordable = false;
    sig->why_not = "a random op given an integer or zero-size array (may fail where it is called or while it runs)";
    return;
  }
  sig->untried = trial == Trial::kDeferred;
  sig->fails_while_running = trial == Trial::kFailsWhileRunning;
  if (trial == Trial::kRefusedAtCall)  // eager raises where it is called
    throw OpInputError("operator '" + op.name + "' rejected its inputs (" + describe_inputs(ins) +
                       "): " + check_message(failure));
}

}  // namespace minpy
