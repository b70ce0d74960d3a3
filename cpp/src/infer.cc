#include "infer.h"

#include <algorithm>
#include <cstdio>

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

}  // namespace

const OpSignature& SignatureCache::lookup(const OpInfo& op, const std::vector<Attr>& attrs, uint64_t attr_hash,
                                          const std::vector<const AVal*>& ins, bool np_shape) {
  uint64_t h = mix64(op.hash ^ attr_hash);
  for (const AVal* a : ins) h = mix64(h ^ hash_aval(*a));
  h = mix64(h ^ (np_shape ? 0x77 : 0x11) ^ (ins.size() << 20));
  auto it = cache_.find(h);
  if (it != cache_.end()) return *it->second;
  ++inferences;
  auto sig = std::make_unique<OpSignature>(infer(op, attrs, ins, np_shape));
  // Shapes that change at every step would grow the cache without end: past kMaxEntries it
  // starts over (a repeat costs one inference again). No caller holds an earlier answer here.
  if (cache_.size() >= kMaxEntries) cache_.clear();
  return *(cache_[h] = std::move(sig));
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
    throw OpInputError("operator '" + op.name + "' rejected its inputs (" + describe_inputs(ins) +
                       "): " + check_message(e.what()));
  }
  return sig;
}

}  // namespace minpy
