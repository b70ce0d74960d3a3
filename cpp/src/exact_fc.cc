#include "exact_fc.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>

#include "executor.h"
#include "kernel_check.h"
#include "mxparse.h"
#include "runtime.h"

namespace minpy {

namespace {

using FcForward = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
using FcBackward = void (*)(const float*, const float*, const float*, float*, float*, float*, int64_t, int64_t,
                            int64_t, int64_t, int64_t);

// Block lengths tried on the first draw, in this order; 0 is one block (any length at least
// the reduction's is the same). oneDNN's GEMM blocks by powers of two and their halves.
constexpr int64_t kCandidates[] = {0, 384, 256, 512, 192, 128, 768, 1024, 320, 448, 96, 64, 32, 16};

// The backward block lengths of a shape checked forward only: _minpy_fc's backward refuses them.
constexpr int64_t kUnchecked = -1;

// One draw: MXNet's FullyConnected forward and backward (autograd, a random head gradient)
// against our kernels.
class FcTrials {
 public:
  FcTrials(AtomicSymbolCreator creator, const std::vector<Attr>& attrs, const AVal& data, const AVal& weight,
           bool bias, bool training, FcForward fwd, FcBackward bwd)
      : creator_(creator),
        data_(data),
        weight_(weight),
        bias_(bias),
        training_(training),
        fwd_(fwd),
        bwd_(bwd),
        draws_(static_cast<uint64_t>(data.dims[0] * 7919 + data.dims[1] * 104729 + weight.dims[0] * 31)) {
    for (const Attr& a : attrs) keys_.push_back(a.key.c_str()), vals_.push_back(a.val.c_str());
  }

  // MXNet's results on a new draw (false on any failure). `unaligned`: the data a view one
  // element into a buffer, as an eager call's data may be.
  bool draw(Draw d, bool unaligned) {
    M_ = data_.dims[0], K_ = data_.dims[1], N_ = weight_.dims[0];
    x_.resize(static_cast<size_t>(M_ * K_));
    w_.resize(static_cast<size_t>(N_ * K_));
    b_.resize(static_cast<size_t>(N_));
    dy_.resize(static_cast<size_t>(M_ * N_));
    for (float& v : x_) v = draws_.value(d);
    for (float& v : w_) v = draws_.value(d);
    for (float& v : b_) v = draws_.bias(d);
    for (float& v : dy_) v = draws_.value(Draw::kWide);
    OwnedArrays held;
    NDArrayHandle hx = nullptr;
    if (unaligned) {
      NDArrayHandle flat = padded_array(x_, data_, &held);
      hx = flat ? block_view(flat, 1, M_, K_, &held) : nullptr;
    } else {
      hx = array_of(data_, x_.data(), &held);
    }
    AVal bias_aval = weight_;
    bias_aval.ndim = 1;
    AVal out_aval = data_;
    out_aval.dims[1] = N_;
    NDArrayHandle hw = array_of(weight_, w_.data(), &held);
    NDArrayHandle hb = bias_ ? array_of(bias_aval, b_.data(), &held) : nullptr;
    NDArrayHandle hdy = array_of(out_aval, dy_.data(), &held);
    if (!hx || !hw || !hdy || (bias_ && !hb)) return false;
    // Gradient buffers, and the inputs marked as autograd variables writing into them.
    std::vector<float> zeros(static_cast<size_t>(std::max(M_ * K_, N_ * K_)), 0.0f);
    NDArrayHandle gx = array_of(data_, zeros.data(), &held), gw = array_of(weight_, zeros.data(), &held);
    NDArrayHandle gb = bias_ ? array_of(bias_aval, zeros.data(), &held) : nullptr;
    if (!gx || !gw || (bias_ && !gb)) return false;
    std::vector<NDArrayHandle> vars{hx, hw}, grads{gx, gw};
    if (bias_) vars.push_back(hb), grads.push_back(gb);
    std::vector<uint32_t> reqs(vars.size(), 1);  // write
    if (MXAutogradMarkVariables(static_cast<uint32_t>(vars.size()), vars.data(), reqs.data(), grads.data()) != 0)
      return false;
    NDArrayHandle y = nullptr;
    {
      AutogradState recording(true, training_);
      y = invoke_op(creator_, keys_, vals_, vars, &held);
    }
    if (!y) return false;
    const int rc = without_gil([&] {
      return MXAutogradBackwardEx(1, &y, &hdy, 0, nullptr, 0, 0, training_ ? 1 : 0, nullptr, nullptr);
    });
    if (rc != 0) return false;
    return read_floats(y, static_cast<size_t>(M_ * N_), &y_) && read_floats(gx, x_.size(), &gx_) &&
           read_floats(gw, w_.size(), &gw_) && (!bias_ || read_floats(gb, b_.size(), &gb_));
  }

  bool forward_agrees(int64_t kc) {
    std::vector<float> y(y_.size());
    fwd_(x_.data(), w_.data(), bias_ ? b_.data() : nullptr, y.data(), M_, K_, N_, kc);
    return same_bits(y, y_);
  }
  bool data_grad_agrees(int64_t kc) {
    std::vector<float> g(gx_.size());
    bwd_(dy_.data(), x_.data(), w_.data(), g.data(), nullptr, nullptr, M_, K_, N_, kc, 0);
    return same_bits(g, gx_);
  }
  bool weight_grad_agrees(int64_t kc) {
    std::vector<float> g(gw_.size());
    bwd_(dy_.data(), x_.data(), w_.data(), nullptr, g.data(), nullptr, M_, K_, N_, 0, kc);
    return same_bits(g, gw_);
  }
  bool bias_grad_agrees() {
    if (!bias_) return true;
    std::vector<float> g(gb_.size());
    bwd_(dy_.data(), x_.data(), w_.data(), nullptr, nullptr, g.data(), M_, K_, N_, 0, 0);
    return same_bits(g, gb_);
  }
  size_t outputs() const { return y_.size() + gx_.size() + gw_.size() + gb_.size(); }

 private:
  AtomicSymbolCreator creator_;
  AVal data_, weight_;
  bool bias_, training_;
  FcForward fwd_;
  FcBackward bwd_;
  DrawSource draws_;
  std::vector<const char*> keys_, vals_;
  int64_t M_ = 0, K_ = 0, N_ = 0;
  std::vector<float> x_, w_, b_, dy_, y_, gx_, gw_, gb_;
};

// The first candidate block length under which `agrees` holds; -1 if none.
template <class Agrees>
int64_t find_block(int64_t reduction, Agrees agrees) {
  for (int64_t kc : kCandidates) {
    if (kc != 0 && kc >= reduction) continue;  // the same as one block, tried first
    if (agrees(kc)) return kc;
  }
  return -1;
}

// Two draws of each kind at least, and until 2^16 outputs were compared (at most 16 draws):
// the first finds the block lengths, the others confirm them; every other draw reads the
// data through an unaligned view.
bool check_fc(AtomicSymbolCreator creator, const std::vector<Attr>& attrs, const AVal& data, const AVal& weight,
              bool bias, bool training, bool backward, FcBlocks* blocks) {
  auto fwd = reinterpret_cast<FcForward>(kernel_symbol("minpy_fc_forward"));
  auto bwd = reinterpret_cast<FcBackward>(kernel_symbol("minpy_fc_backward"));
  auto supported = reinterpret_cast<int (*)()>(kernel_symbol("minpy_gemm_supported"));
  if (!fwd || !bwd || !supported || !supported()) return false;
  // Our draws are no part of the user's autograd graph; the graph's training flag (oneDNN's
  // forward kind follows it).
  AutogradState state(false, training);
  FcTrials trials(creator, attrs, data, weight, bias, training, fwd, bwd);
  const int64_t M = data.dims[0], K = data.dims[1], N = weight.dims[0];
  bool found = false;
  for (Draw d : {Draw::kWide, Draw::kUnderflow}) {
    size_t compared = 0;
    for (int n = 0; n < 2 || (compared < (1u << 16) && n < 16); ++n) {
      if (!trials.draw(d, n % 2 == 1)) return false;
      if (!found) {
        blocks->kc = find_block(K, [&](int64_t kc) { return trials.forward_agrees(kc); });
        if (backward) {
          blocks->kc_data = find_block(N, [&](int64_t kc) { return trials.data_grad_agrees(kc); });
          blocks->kc_weight = find_block(M, [&](int64_t kc) { return trials.weight_grad_agrees(kc); });
        }
        if (blocks->kc < 0 || (backward && (blocks->kc_data < 0 || blocks->kc_weight < 0))) return false;
        found = true;
      } else if (!trials.forward_agrees(blocks->kc)) {
        return false;
      }
      if (backward && (!trials.data_grad_agrees(blocks->kc_data) || !trials.weight_grad_agrees(blocks->kc_weight) ||
                       !trials.bias_grad_agrees()))
        return false;
      compared += trials.outputs();
    }
  }
  return true;
}

// MXNet's Activation(relu), forward and backward (autograd, head gradient `g`), on `x`
// against relu_forward and relu_backward of our kernel library.
bool check_relu(const AVal& out, bool training) {
  using Forward = void (*)(float*, int64_t);
  using Backward = void (*)(const float*, const float*, float*, int64_t);
  auto fwd = reinterpret_cast<Forward>(kernel_symbol("minpy_relu_forward"));
  auto bwd = reinterpret_cast<Backward>(kernel_symbol("minpy_relu_backward"));
  AtomicSymbolCreator activation = nullptr;
  if (!fwd || !bwd || NNGetOpHandle("Activation", &activation) != 0 || !activation) return false;
  if (out.ndim != 2 || out.dtype != 0) return false;
  const size_t n = static_cast<size_t>(out.dims[0] * out.dims[1]);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> pool{0.0f, -0.0f, inf, -inf, nan, -nan, 1e-45f, -1e-45f, 1e-39f, -1e-39f, 1.0f, -1.0f};
  DrawSource draws(static_cast<uint64_t>(n) * 2654435761u);
  while (pool.size() < 32) pool.push_back(draws.value(Draw::kWide));
  const size_t P = pool.size();
  std::vector<float> x(n), g(n);
  for (size_t k = 0; k < n; ++k) {  // every pair of the pool once within P * P elements, then random
    x[k] = k < P * P ? pool[k % P] : draws.value(Draw::kWide);
    g[k] = k < P * P ? pool[(k / P) % P] : draws.value(Draw::kWide);
  }
  AutogradState state(false, training);
  std::vector<float> want_y, want_d;
  if (!forward_backward(activation, {"act_type"}, {"relu"}, out, x, g, training, &want_y, &want_d)) return false;
  std::vector<float> ours_y = x, ours_d(n);
  fwd(ours_y.data(), static_cast<int64_t>(n));
  bwd(g.data(), ours_y.data(), ours_d.data(), static_cast<int64_t>(n));
  return same_bits(ours_y, want_y) && same_bits(ours_d, want_d);
}

}  // namespace

bool fc_kernel_blocks(AtomicSymbolCreator creator, const std::vector<Attr>& attrs, const AVal& data,
                      const AVal& weight, bool bias, bool training, bool backward, FcBlocks* blocks) {
  static std::mutex mu;
  static std::map<std::string, std::pair<bool, FcBlocks>> known;
  const std::string key = canonical_attrs(attrs) + data.shape_str() + weight.shape_str() + (bias ? "b" : "") +
                          (training ? "t" : "") + (backward ? "g" : "");
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known.find(key);
    if (it != known.end()) {
      *blocks = it->second.second;
      return it->second.first;
    }
  }
  if (checks_deferred()) return false;
  // not under the lock: it waits for MXNet
  FcBlocks found;
  if (!backward) found.kc_data = found.kc_weight = kUnchecked;
  const bool exact = check_fc(creator, attrs, data, weight, bias, training, backward, &found);
  std::lock_guard<std::mutex> lock(mu);
  known[key] = {exact, found};
  *blocks = found;
  return exact;
}

int64_t fc_min_multiply_adds() {
  static const int64_t n = [] {
    const char* v = std::getenv("MINPY_JIT_FC_MIN_WORK");
    return v && *v ? std::max<int64_t>(0, std::atoll(v)) : int64_t(4) << 20;
  }();
  return n;
}

int64_t fc_serial_multiply_adds() {
  static const bool floor_set = [] {
    const char* v = std::getenv("MINPY_JIT_FC_MIN_WORK");
    return v && *v;
  }();
  if (floor_set) return 0;  // the variable's floor alone decides
  auto serial = reinterpret_cast<int64_t (*)()>(kernel_symbol("minpy_gemm_serial_multiply_adds"));
  return serial ? serial() : 0;  // (no kernel library: no _minpy_fc either)
}

std::vector<char> gradient_reach(const Trace& t) {
  std::vector<char> reach(t.values.size(), 0);
  if (t.backward < 0) return reach;
  const Node& b = t.nodes[t.backward];  // inputs: heads, the given head gradients, the variables
  const int heads = std::atoi(attr_value(b.attrs, "num_heads", "0").c_str());
  const std::string mask = attr_value(b.attrs, "head_grads", "");
  size_t first_var = static_cast<size_t>(heads);
  for (int h = 0; h < heads && h < static_cast<int>(mask.size()); ++h) first_var += mask[h] == '1';
  for (size_t i = first_var; i < b.in.size(); ++i) reach[b.in[i]] = 1;
  for (int i = 0; i < t.backward; ++i) {
    const Node& n = t.nodes[i];
    bool any = false;
    for (int v : n.in) any |= reach[v] != 0;
    if (any)
      for (int v : n.out) reach[v] = 1;
  }
  return reach;
}

std::vector<Attr> fc_kernel_attrs(const Trace& t, const Node& n, const std::vector<char>& reach) {
  if (n.op->name != "FullyConnected" || n.out.size() != 1 || !n.mutated.empty() || n.in.size() < 2) return {};
  const AVal& x = t.values[n.in[0]].aval;
  const AVal& w = t.values[n.in[1]].aval;
  // Products between one thread's size and the floor stay MXNet's under jit(): W4's (16, 128) by
  // (512, 128), 1M multiply-adds, took longer as our op there, where the Python thread records
  // the next segment meanwhile and our second thread has no core to run on. A fragment's graph
  // runs with Python waiting in its replay: W4 as a @function took 1.50 ms with MXNet's product,
  // 1.25 ms with ours (function_workloads.py --only w4). Below the band our op runs on one
  // thread and costs less than oneDNN's small products: W3's (64, 256) by (10, 256) layer as
  // ours took W3's step from 0.422-0.441 to 0.418-0.427 ms (README, gemm).
  const int64_t work = x.ndim == 2 ? x.dims[0] * x.dims[1] * w.dims[0] : 0;
  if (x.ndim == 2 && !t.launched_alone && work < fc_min_multiply_adds() && work >= fc_serial_multiply_adds())
    return {};
  const bool bias = !mx_bool(attr_value(n.attrs, "no_bias", "False"));
  if (n.in.size() != (bias ? 3u : 2u)) return {};
  if (x.ndim != 2 || w.ndim != 2 || x.dtype != 0 || w.dtype != 0 || x.dev_type != 1 || w.dev_type != 1) return {};
  const int64_t hidden = std::atoll(attr_value(n.attrs, "num_hidden", "0").c_str());
  if (w.dims[0] != hidden || w.dims[1] != x.dims[1] || x.dims[0] < 1 || hidden < 1 || x.dims[1] < 1) return {};
  if (bias) {
    const AVal& b = t.values[n.in[2]].aval;
    if (b.ndim != 1 || b.dims[0] != hidden || b.dtype != 0 || b.dev_type != 1) return {};
  }
  // Only a graph with its backward() inside runs the op's backward (exact_fc.h).
  const bool backward = t.backward >= 0;
  // MXNet 1.9.1's oneDNN backward writes the bias gradient only inside its weight gradient's
  // branch: a backward wanting the bias's gradient and not the weight's leaves it unwritten
  // eagerly (a fresh buffer's zeros, or whatever memory holds). Eager's operator keeps eager's
  // result there; ours would write the true sum (fuzz seeds 11329228, 11236385: 64 against 0).
  if (backward && bias && reach[n.in[2]] && !reach[n.in[1]]) return {};
  FcBlocks blocks;
  if (!fc_kernel_blocks(n.op->creator, n.attrs, x, w, bias, t.training, backward, &blocks)) return {};
  std::vector<Attr> attrs = n.attrs;
  attrs.push_back({"kc", std::to_string(blocks.kc)});
  attrs.push_back({"kc_data", std::to_string(blocks.kc_data)});
  attrs.push_back({"kc_weight", std::to_string(blocks.kc_weight)});
  // The gradients the graph's backward() wants (the op's backward skips the others, as
  // MXNet's does for a request of kNullOp: W3's first layer has no data gradient).
  const bool wanted = t.backward >= 0;
  attrs.push_back({"data_grad", wanted && reach[n.in[0]] ? "1" : "0"});
  attrs.push_back({"weight_grad", wanted && reach[n.in[1]] ? "1" : "0"});
  return attrs;
}

const char* own_gradient_op(const std::string& op, const std::string& act, size_t num_inputs,
                            std::vector<size_t>* keep) {
  if (op != "_backward__minpy_fc" || num_inputs < 4) return nullptr;
  *keep = {0, 1, 2};
  if (act == "relu") keep->push_back(num_inputs - 1);  // the forward's output, after the activation
  return "_minpy_fc_grad";
}

bool relu_epilogue_exact(const AVal& out, bool training) {
  return checked_once("relu" + out.shape_str() + (training ? "t" : ""), [&] { return check_relu(out, training); });
}

}  // namespace minpy
