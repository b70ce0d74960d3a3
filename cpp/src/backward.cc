// backward() inside our graph.
//
// Eager MXNet, and this runtime without it, run a training step's backward() as: the
// recorded forward as one graph under autograd (a tape node), then MXAutogradBackwardEx,
// which on every call builds the backward graph from the tape, infers and plans it, and
// runs it. Here, when backward() is called on results of the pending recorded trace, a
// backward node is appended to the trace instead, and the trace runs at once as one graph
// without autograd: forward and gradient nodes together (the gradient made by MXNet's own
// pass, grad_graph.h), the gradients written straight into the variables' gradient
// buffers, which are then marked fresh as MXNet's backward marks them. One compiled,
// cached launch instead of a launch and an autograd backward.
//
// Only when the result is what eager MXNet gives: every head a lazy result of this trace,
// no retain_graph / create_graph / explicit variables, the trace's external arrays either
// constants or variables with grad_req 'write' (not 'add', nor history recorded elsewhere),
// and no recorded value still held outside the heads' graph (eager would keep that one's
// history for a later backward; a graph run keeps none). Otherwise the
// trace runs under autograd and MXNet's backward runs, as before.
#include "backward.h"

#include <algorithm>
#include <unordered_set>

#include "failures.h"
#include "fuse.h"
#include "mxapi.h"
#include "parts.h"
#include "runtime.h"

namespace minpy {

const char* const kBackwardOp = "_minpy_backward";

namespace {

OpInfo& backward_op() {
  static OpInfo info = [] {
    OpInfo i;
    i.name = kBackwardOp;
    i.hash = hash_bytes(i.name.data(), i.name.size());
    return i;
  }();
  return info;
}

// Ops whose backward does not run in our graph as in eager's backward (tests/test_grad_sweep.py).
// Eager's backward requests only the gradients someone reads (kNullOp for the others) and a
// kernel writes a variable's gradient buffer directly; in our graph every output of a gradient
// node is requested (grad_graph.cc keeps a BlockGrad on the unread ones, which CachedOp's own
// pass needs) and a gradient output is a graph buffer copied into the variable's. Embedding
// refuses a request for its data's gradient (every Gluon Embedding model's backward() raised
// under jit()); the regression outputs, SoftmaxOutput, the CTC losses and index_copy never write
// the gradient of their label or index, so eager's buffer keeps what it held where ours got whatever the
// graph's buffer held (the data's values). Deconvolution's backward fails in oneDNN in our
// graph ("could not execute a primitive"), and leaves that error on MXNet's shared state.
bool backward_fails_in_graph(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "Embedding", "LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput",
      "_sparse_LinearRegressionOutput", "_sparse_LogisticRegressionOutput", "_sparse_MAERegressionOutput",
      "SoftmaxOutput", "Softmax", "ctc_loss", "_contrib_ctc_loss", "CTCLoss", "_contrib_CTCLoss",
      "_contrib_index_copy", "Deconvolution",
  };
  return ops.count(op) > 0;
}

// MXNet's legacy operators (OperatorProperty, gradients made by OpPropGradient): CachedOp's own
// gradient pass over a graph that holds one and our backward of it segfaults inside MXNet
// (MXCreateCachedOpEx -> CachedOp::CachedOp -> MXGradient; fuzz seeds 80699 and 204924 with
// SwapAxis). Found one by one on this build: SwapAxis, SliceChannel, Crop, Pooling_v1,
// Convolution_v1, Sequence{Last,Mask,Reverse}, InstanceNorm, L2Normalization, Pad, Correlation;
// the others of MXNet 1.9.1's legacy set are listed without a case to try them on. Not legacy but
// alike: _contrib_MultiBoxPrior (tests/test_grad_sweep.py crashed in CachedOp's MXGradient).
bool legacy_gradient(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "SwapAxis", "SliceChannel", "Crop", "Pooling_v1", "Convolution_v1", "SequenceLast", "SequenceMask",
      "SequenceReverse", "InstanceNorm", "L2Normalization", "Pad", "Correlation", "GridGenerator",
      "BilinearSampler", "SpatialTransformer", "ROIPooling", "SVMOutput", "IdentityAttachKLSparseReg",
      "BatchNorm_v1", "_contrib_SyncBatchNorm", "_contrib_DeformableConvolution",
      "_contrib_ModulatedDeformableConvolution", "_contrib_DeformablePSROIPooling", "_contrib_PSROIPooling",
      "_contrib_CountSketch", "_contrib_fft", "_contrib_ifft", "_contrib_Proposal", "_contrib_MultiProposal",
      "_contrib_MultiBoxPrior",
  };
  return ops.count(op) > 0;
}

// Whether the trace may stay open past its backward node (Config::whole_step). Only once the
// same forward and backward (the backward node's position: everything recorded up to it) has
// been built and run as one graph at backward() (Runtime::backward_built): an error building
// the gradient (an op without one) is then raised by backward() itself, as eagerly. Later reads
// of a gradient must find the backward node's value, through whatever handle they use
// (Trace::canonical, by storage chunk). Not when the trace already holds another handle on
// a gradient buffer's storage (the forward read `w.grad`, or a view of it): that one would
// keep its old value; the flush's alias check would replay such a trace eagerly, so it
// runs now instead, as before.
bool keeps_pending(const Trace& t, const std::vector<NDArrayHandle>& grads) {
  if (!R->cfg.whole_step || !peek_works() || !chunk_identity_works()) return false;
  if (!R->backward_built.count(t.nodes.back().position)) return false;
  std::unordered_set<const void*> chunks;
  for (NDArrayHandle g : grads)
    if (!chunks.insert(chunk_of(g)).second) return false;  // two buffers on one storage
  const std::unordered_set<NDArrayHandle> buffers(grads.begin(), grads.end());
  for (const auto& kv : t.slots)
    if (chunks.count(chunk_of(kv.first)) && !buffers.count(kv.first)) return false;
  return true;
}

}  // namespace

bool is_backward_node(const Node& n) { return n.op == &backward_op(); }

bool backward_in_graph(ThreadState& ts, const std::vector<NDArrayHandle>& heads,
                       const std::vector<NDArrayHandle>& head_grads, bool retain_graph, bool train) {
  Trace& t = ts.trace;
  if (!R->cfg.backward_in_graph || ts.depth == 0 || ts.busy || ts.flushing || t.empty() || !t.recording ||
      t.np_shape || retain_graph || train != t.training || t.backward >= 0 || (ts.site && ts.site->eager) ||
      heads.empty() || head_grads.size() != heads.size() || !autograd_peek_works())
    return false;
  // An op that can fail, or an input a failure may have reached, runs op by op (failures.h):
  // MXNet's own backward then sees exactly what it sees eagerly.
  if (t.can_fail) return false;
  {
    std::vector<NDArrayHandle> ins;
    for (const Value& val : t.values)
      if (val.node < 0 && val.ext) ins.push_back(val.ext);
    if (any_suspect(ins)) return false;
  }
  const size_t nv = t.values.size();

  // Heads: lazy results of this trace.
  std::vector<int> head_values;
  for (NDArrayHandle h : heads) {
    auto it = t.slots.find(h);
    if (it == t.slots.end() || t.values[it->second.value].node < 0) return false;
    head_values.push_back(it->second.value);
  }

  // The trace's external arrays: constants, or variables whose gradient MXNet would write.
  std::vector<char> is_var(nv, 0), recorded(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = t.values[v];
    if (val.node >= 0 || !val.ext) continue;
    int req = 0;
    const AutogradRole role = autograd_role(val.ext, &req);
    if (role == AutogradRole::kHistory) return false;
    if (role == AutogradRole::kVariable) {
      if (req != 1 && req != 2) return false;  // 'add': MXNet adds into the buffer in its kernels
      is_var[v] = 1;
    }
    recorded[v] = is_var[v] || in_autograd_graph(val.ext);
  }
  // The values eager MXNet records (so that they keep their history after a backward that does
  // not reach them): an op's results when one of its inputs is in the autograd graph -- a
  // variable, a recorded result, or a plain array that an op recorded before read, which
  // joined the graph then (`dot(c, x)` with x a variable, then `BlockGrad(c)`: fuzz seed 610322).
  for (const Node& n : t.nodes) {
    bool d = false;
    for (int v : n.in) d |= recorded[v] != 0;
    if (d)
      for (int v : n.in) recorded[v] = 1;
    for (int o : n.out) recorded[o] = d;
  }

  // An op eager's gradient pass skips behind a zero gradient (a comparison's, floor's: parts.h)
  // that our graph would run: one our kernels may fuse (a fused unit's gradient always runs,
  // with zeros where eager's pass has zero nodes: 0 * inf = NaN where eager's gradient is 0), or
  // one behind a value handed two zero nodes, which MXNet's pass in our graph sums (parts.h).
  // MXNet's own backward runs instead, after a flush that gives such ops eager's autograd
  // nodes (flush.cc).
  if (t.zero_grad_ops) {
    std::vector<uint8_t> gradient;
    std::vector<char> skipped, skipped_in_graph;
    eager_gradient_pass(t, head_values, &gradient, &skipped);
    eager_gradient_pass(t, head_values, &gradient, &skipped_in_graph, /*sums_zero_nodes=*/true);
    const bool fusing = R->cfg.fuse && !R->kernels.empty();
    for (size_t n = 0; n < t.nodes.size(); ++n)
      if (skipped[n] && (!skipped_in_graph[n] || (fusing && may_fuse(t, n)))) return false;
  }

  // The heads' graph: the nodes they depend on.
  std::vector<char> in_graph(t.nodes.size(), 0);
  std::vector<int> stack;
  for (int v : head_values) stack.push_back(t.values[v].node);
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (in_graph[n]) continue;
    in_graph[n] = 1;
    for (int v : t.nodes[n].in)
      if (t.values[v].node >= 0) stack.push_back(t.values[v].node);
  }
  // A constant the heads' graph reads that is already in MXNet's autograd graph (an input of an
  // op recorded earlier, whose history a later backward may still use): eager's backward
  // without retain_graph clears the autograd entry of every array it visits, constants
  // included, so that later backward fails in MXNet ('The any container is empty'), and a
  // graph run would leave it working (fuzz seeds 308087, 87630, 314032, 318000, 413478).
  for (size_t n = 0; n < t.nodes.size(); ++n)
    if (in_graph[n])
      for (int v : t.nodes[n].in)
        if (t.values[v].node < 0 && t.values[v].ext && !is_var[v] && in_autograd_graph(t.values[v].ext))
          return false;
  // A value read three or more times: MXNet sums its gradient contributions in the order of
  // its own graph, which ours need not share (a + b is b + a; three terms are not). A head's
  // own head gradient is one more term (backward([y, tanh_x]) with tanh_x read twice: fuzz
  // seed 9716324, an ulp off).
  std::vector<int> reads(nv, 0);
  for (int v : head_values)
    if (++reads[v] > 2) return false;
  for (size_t n = 0; n < t.nodes.size(); ++n)
    if (in_graph[n])
      for (int v : t.nodes[n].in)
        if (++reads[v] > 2) return false;
  // An op with several results (split): CachedOp's own gradient pass over the combined graph
  // crashed inside MXNet (segfault, tests/stress/fuzz.py seed 50181), used outputs or not.
  for (size_t n = 0; n < t.nodes.size(); ++n)
    if (in_graph[n] && (t.nodes[n].out.size() > 1 || legacy_gradient(t.nodes[n].op->name) ||
                        backward_fails_in_graph(t.nodes[n].op->name)))
      return false;
  // MXNet 1.9.1's oneDNN FullyConnected backward writes the bias gradient only inside the
  // weight gradient's branch: eagerly a bias that needs a gradient behind a weight that needs
  // none (a frozen layer's weight, `grad_req='null'`, with a trainable bias) keeps what its
  // buffer held. Our graph asks every gradient of the node (grad_graph.cc) and would write the
  // true sums: MXNet's own backward runs instead, asking what eager asks.
  {
    std::vector<char> wants(nv, 0);  // a gradient reaches it: a variable, or computed from one
    for (size_t v = 0; v < nv; ++v) wants[v] = is_var[v];
    for (const Node& n : t.nodes) {
      bool w = false;
      for (int v : n.in) w |= wants[v] != 0;
      for (int o : n.out) wants[o] = w;
    }
    for (size_t n = 0; n < t.nodes.size(); ++n) {
      const Node& fc = t.nodes[n];
      if (in_graph[n] && fc.op->name == "FullyConnected" && fc.in.size() >= 3 && wants[fc.in[2]] && !wants[fc.in[1]])
        return false;
    }
  }
  // A recorded result still held, made by a node outside the heads' graph: eager MXNet keeps
  // its history (a later backward could use it, a later write into it under record() is
  // refused, an op reading it is recorded); a graph run keeps none.
  for (const auto& kv : t.slots) {
    const Slot& s = kv.second;
    const Value& val = t.values[s.value];
    if (val.node < 0 || in_graph[val.node] || !recorded[s.value]) continue;
    const bool live = s.ours ? held_elsewhere(static_cast<PyObject*>(s.owner)) : s.value != s.ext_value;
    if (live) return false;
  }

  // The variables: those the heads' graph reads, in order of first use.
  std::vector<int> xs;
  std::vector<char> taken(nv, 0);
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (!in_graph[n]) continue;
    for (int v : t.nodes[n].in)
      if (is_var[v] && !taken[v]) taken[v] = 1, xs.push_back(v);
  }
  if (xs.empty()) return false;  // nothing to differentiate: MXNet's own answer (an error) stands

  // Each variable's gradient buffer, as a handle of our own (freed after the flush).
  std::vector<NDArrayHandle> grads;
  std::vector<AVal> grad_avals;
  auto give_up = [&] {
    for (NDArrayHandle g : grads) MXNDArrayFree(g);
    return false;
  };
  for (int v : xs) {
    NDArrayHandle g = nullptr;
    if (MXNDArrayGetGrad(t.values[v].ext, &g) != 0 || !g) return give_up();
    grads.push_back(g);
    AVal a;
    try {
      a = aval_of(g);
    } catch (const MXError&) {
      return give_up();
    }
    const AVal& w = t.values[v].aval;
    if (a.dtype != w.dtype || a.ndim != w.ndim || !std::equal(a.dims, a.dims + a.ndim, w.dims)) return give_up();
    grad_avals.push_back(a);
  }

  // Head gradients: given arrays (external, or results of this trace), else MXNet's ones.
  std::vector<int> given;
  std::string mask;
  for (size_t i = 0; i < heads.size(); ++i) {
    if (!head_grads[i]) {
      mask += '0';
      continue;
    }
    const int v = t.value_of(head_grads[i], nullptr, nullptr);
    const AVal &a = t.values[v].aval, &h = t.values[head_values[i]].aval;
    if (a.dtype != h.dtype || a.size() != h.size()) return give_up();
    given.push_back(v);
    mask += '1';
  }

  // The backward node: in = heads, given head gradients, variables; out = one gradient per
  // variable, written into its gradient buffer.
  std::vector<int> in = head_values;
  in.insert(in.end(), given.begin(), given.end());
  in.insert(in.end(), xs.begin(), xs.end());
  std::vector<Attr> attrs = {{"num_heads", std::to_string(heads.size())}, {"head_grads", mask}};
  const uint64_t attr_hash = hash_attrs(attrs);
  const int first = t.add_node(&backward_op(), std::move(attrs), attr_hash, in, grad_avals, {}, -1);
  if (R->cfg.track_source) t.nodes.back().loc = R->sources.capture();
  t.backward = static_cast<int>(t.nodes.size()) - 1;
  std::vector<NDArrayHandle> variables;
  std::vector<py::object> keep;  // the variables' arrays, alive past the flush that releases the trace
  for (size_t j = 0; j < xs.size(); ++j) {
    t.owned.push_back(grads[j]);
    t.bind(grads[j], first + static_cast<int>(j), false, nullptr);
    const NDArrayHandle var = t.values[xs[j]].ext;
    variables.push_back(var);
    auto it = t.slots.find(var);
    if (it != t.slots.end() && it->second.owner)
      keep.push_back(py::reinterpret_borrow<py::object>(static_cast<PyObject*>(it->second.owner)));
  }
  ++R->stats.ops_recorded;
  ++R->pending;
  ++R->stats.backward_in_graph;
  if (keeps_pending(t, grads)) {
    // The whole step in one graph: the trace stays open, so the update that reads these
    // gradients joins it (record.cc lets ops recorded with autograd off follow a backward
    // node). MXNet's backward marks the gradients fresh when it is called: so here.
    for (NDArrayHandle g : grads) t.grad_buffers[chunk_of(g)] = g;
    for (NDArrayHandle v : variables) MX_CALL(MXNDArraySetGradState(v, 1));
    ++R->stats.backward_pending;
    return true;
  }
  const uint64_t position = t.nodes.back().position;
  const uint64_t executions = R->stats.executions, replays = R->stats.eager_replays;
  flush_current(ts, "backward", user_site());
  if (R->stats.executions == executions + 1 && R->stats.eager_replays == replays) {  // built and ran
    if (R->backward_built.size() > (1u << 12)) R->backward_built.clear();  // bounded: new shapes at every step
    R->backward_built.insert(position);
  }
  for (NDArrayHandle v : variables) MX_CALL(MXNDArraySetGradState(v, 1));  // as MXNet's backward does
  return true;
}

}  // namespace minpy
