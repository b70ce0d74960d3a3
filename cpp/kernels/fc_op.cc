// _minpy_fc: FullyConnected on 2-D float32 data through exact_gemm.h's kernels, on both
// cores, with the summation order MXNet's own operator uses for the same shapes.
//
// The runtime puts it in a graph in place of FullyConnected only after checking, for that
// shape, that MXNet's operator and these kernels agree in every bit on random data, and with
// the reduction blocks the check found (attributes kc, kc_data, kc_weight): see
// cpp/src/exact_fc.h. Attributes as FullyConnected's (num_hidden, no_bias, flatten); act=relu
// applies the Activation(act_type='relu') that read the product (the graph's only reader of it).
//
// Backward (MXNet makes _backward__minpy_fc, handing it this node's state): inputs [dY, X, W,
// (b), Y], outputs [dX, dW, (db)]. A gradient the graph does not read (attributes data_grad,
// weight_grad: the runtime knows which values its backward() reaches) or that MXNet does not
// want (kNullOp: no memory) is not computed: W3's first layer skips the data gradient, as
// MXNet's operator does. Gradients
// are written, never added (lib_api.h passes no request): the runtime uses the op only in
// graphs MXNet's autograd does not record, whose gradient sums are explicit nodes.
//
// _minpy_fc_grad: the same backward as an op of its own, inputs [dY, X, W, (Y with act=relu)],
// outputs [dX, dW, (db)], attributes as _minpy_fc's. The runtime puts it where MXNet's
// gradient pass made _backward__minpy_fc (exact_fc.h, own_gradient_op): that node has no
// gradient of its own, so CachedOp, which differentiates every graph it is given, needs a
// BlockGrad after each of its outputs (three more launches a layer); a stateful library op
// has one (never run: these graphs are not recorded).
#include <stdexcept>
#include <string>
#include <vector>

#include "mxnet/lib_api.h"

#include "attrs.h"
#include "exact_gemm.h"

using namespace mxnet::ext;

namespace minpy_kernels {
namespace fc {
namespace {

MXReturnValue report(const std::exception& e) {
  MX_ERROR_MSG << "_minpy_fc: " << e.what();
  return MX_FAIL;
}

bool parse_flag(const AttrMap& attrs, const std::string& key, bool dflt = false) {
  const std::string v = attr_or(attrs, key, dflt ? "True" : "False");
  if (v == "True" || v == "true" || v == "1") return true;
  if (v == "False" || v == "false" || v == "0") return false;
  throw std::runtime_error("attribute '" + key + "' is not a boolean: '" + v + "'");
}

struct Plan {
  int64_t num_hidden = 0, kc = 0, kc_data = 0, kc_weight = 0;
  bool bias = true;
  bool data_grad = true, weight_grad = true;  // the gradients the graph reads
  bool relu = false;  // act=relu: Activation(act_type='relu') of the product, as MXNet's (exact_gemm.h)
};

Plan parse_plan(const AttrMap& attrs) {
  Plan p;
  p.num_hidden = parse_int(attr(attrs, "num_hidden"));
  p.bias = !parse_flag(attrs, "no_bias");
  p.kc = parse_int(attr(attrs, "kc"));
  p.kc_data = parse_int(attr(attrs, "kc_data"));
  p.kc_weight = parse_int(attr(attrs, "kc_weight"));
  p.data_grad = parse_flag(attrs, "data_grad", true);
  p.weight_grad = parse_flag(attrs, "weight_grad", true);
  const std::string act = attr_or(attrs, "act", "");
  if (!act.empty() && act != "relu")
    throw std::runtime_error("attribute 'act' must be 'relu' or absent: '" + act + "'");
  p.relu = act == "relu";
  return p;
}

// The tensor's floats after checking its dtype and size (a null pointer: not wanted).
float* floats(const MXTensor& t, int64_t size, const char* what) {
  if (!t.data_ptr) return nullptr;
  if (t.dtype != kFloat32 || const_cast<MXTensor&>(t).size() != size)
    throw std::runtime_error(std::string(what) + " must be float32 of " + std::to_string(size) + " elements");
  return static_cast<float*>(t.data_ptr);
}

// The gradients (a null one not computed) from dY, through relu from the forward's output Y with
// act=relu: the op's backward, and a direct launch's (minpy_fc_grad_program_run).
void backward(const Plan& p, const float* dY, const float* X, const float* W, const float* Y, float* dX, float* dW,
              float* dB, int64_t M, int64_t K) {
  const int64_t N = p.num_hidden;
  thread_local std::vector<float> masked;
  if (p.relu) {  // the gradient before the activation
    masked.resize(static_cast<size_t>(M * N));
    gemm::relu_backward(dY, Y, masked.data(), M * N);
    dY = masked.data();
  }
  gemm::fc_backward(dY, X, W, dX, dW, dB, M, K, N, p.kc_data, p.kc_weight);
}

// Inputs [dY, X, W, ..., Y], outputs [dX, dW, (dB)]: _backward__minpy_fc and _minpy_fc_grad
// alike (the forward's output Y last; read with act=relu only).
MXReturnValue gradients(const Plan& p, std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs) {
  try {
    const MXTensor& x = (*inputs)[1];
    if (x.shape.size() != 2) throw std::runtime_error("backward: data must be 2-D");
    const int64_t M = x.shape[0], K = x.shape[1], N = p.num_hidden;
    const float* dY = floats((*inputs)[0], M * N, "output gradient");
    const float* X = floats(x, M * K, "data");
    const float* W = floats((*inputs)[2], N * K, "weight");
    float* dX = p.data_grad ? floats((*outputs)[0], M * K, "data gradient") : nullptr;
    float* dW = p.weight_grad ? floats((*outputs)[1], N * K, "weight gradient") : nullptr;
    float* dB = p.bias ? floats((*outputs)[2], N, "bias gradient") : nullptr;
    if (!dY || !X || !W) throw std::runtime_error("backward: an input has no memory");
    const float* Y = nullptr;
    if (p.relu) {
      if (inputs->size() < 4) throw std::runtime_error("backward: the forward's output is not an input");
      Y = floats(inputs->back(), M * N, "output");
      if (!Y) throw std::runtime_error("backward: the output has no memory");
    }
    if (p.kc_data < 0 || p.kc_weight < 0)  // checked forward only (cpp/src/exact_fc.h)
      throw std::runtime_error("backward of a node whose gradients were not checked against MXNet's");
    backward(p, dY, X, W, Y, dX, dW, dB, M, K);
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

// Y (M, N) = X (M, K) . W (N, K)^T (+ b), then relu with act=relu: the op's forward, and a
// direct launch's (minpy_fc_program_run).
void forward(const Plan& p, const float* X, const float* W, const float* b, float* Y, int64_t M, int64_t K) {
  thread_local std::vector<float> scratch;  // X transposed
  scratch.resize(static_cast<size_t>(M * K));
  gemm::fc_forward(X, W, b, Y, M, K, p.num_hidden, p.kc, scratch.data());
  if (p.relu) gemm::relu_forward(Y, M * p.num_hidden);
}

class FcState : public CustomStatefulOp {
 public:
  explicit FcState(Plan p) : p_(p) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource&) override {
    try {
      const MXTensor& x = (*inputs)[0];
      if (x.shape.size() != 2 || !gemm::supported()) throw std::runtime_error("data must be 2-D (and AVX2 present)");
      const int64_t M = x.shape[0], K = x.shape[1], N = p_.num_hidden;
      const float* X = floats(x, M * K, "data");
      const float* W = floats((*inputs)[1], N * K, "weight");
      const float* b = p_.bias ? floats((*inputs)[2], N, "bias") : nullptr;
      float* Y = floats((*outputs)[0], M * N, "output");
      if (!X || !W || !Y || (p_.bias && !b)) throw std::runtime_error("an input or the output has no memory");
      forward(p_, X, W, b, Y, M, K);
      return MX_SUCCESS;
    } catch (const std::exception& e) { return report(e); }
  }

  MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource&) override {
    return gradients(p_, inputs, outputs);
  }

 private:
  Plan p_;
};

class FcGradState : public CustomStatefulOp {
 public:
  explicit FcGradState(Plan p) : p_(p) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource&) override {
    return gradients(p_, inputs, outputs);
  }

  MXReturnValue Backward(std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) override {
    MX_ERROR_MSG << "_minpy_fc_grad: no second derivative (the op is used only in graphs autograd does not record)";
    return MX_FAIL;
  }

 private:
  Plan p_;
};

MXReturnValue parse_attrs(const AttrMap& attrs, int* num_in, int* num_out) {
  try {
    *num_in = parse_plan(attrs).bias ? 3 : 2;
    *num_out = 1;
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue infer_type(const AttrMap&, std::vector<int>* in_types, std::vector<int>* out_types) {
  for (size_t j = 0; j < in_types->size(); ++j)
    if ((*in_types)[j] != kFloat32) {
      MX_ERROR_MSG << "_minpy_fc: input " << j << " must be float32";
      return MX_FAIL;
    }
  for (auto& t : *out_types) t = kFloat32;
  return MX_SUCCESS;
}

MXReturnValue infer_shape(const AttrMap& attrs, std::vector<std::vector<unsigned int>>* in_shapes,
                          std::vector<std::vector<unsigned int>>* out_shapes) {
  try {
    const Plan p = parse_plan(attrs);
    const auto& x = (*in_shapes)[0];
    if (x.size() != 2) throw std::runtime_error("data must be 2-D");
    (*out_shapes)[0] = {x[0], static_cast<unsigned int>(p.num_hidden)};
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue create_state(const AttrMap& attrs, const MXContext&, const std::vector<std::vector<unsigned int>>&,
                           const std::vector<int>, CustomStatefulOp** state) {
  try {
    *state = CustomStatefulOp::create<FcState>(parse_plan(attrs));
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue grad_parse_attrs(const AttrMap& attrs, int* num_in, int* num_out) {
  try {
    const Plan p = parse_plan(attrs);
    *num_in = p.relu ? 4 : 3;
    *num_out = p.bias ? 3 : 2;
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue grad_infer_shape(const AttrMap&, std::vector<std::vector<unsigned int>>* in_shapes,
                               std::vector<std::vector<unsigned int>>* out_shapes) {
  const auto& weight = (*in_shapes)[2];
  if ((*in_shapes)[1].size() != 2 || weight.size() != 2) {
    MX_ERROR_MSG << "_minpy_fc_grad: data and weight must be 2-D";
    return MX_FAIL;
  }
  (*out_shapes)[0] = (*in_shapes)[1];
  (*out_shapes)[1] = weight;
  if (out_shapes->size() > 2) (*out_shapes)[2] = {weight[0]};
  return MX_SUCCESS;
}

MXReturnValue create_grad_state(const AttrMap& attrs, const MXContext&, const std::vector<std::vector<unsigned int>>&,
                                const std::vector<int>, CustomStatefulOp** state) {
  try {
    *state = CustomStatefulOp::create<FcGradState>(parse_plan(attrs));
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

}  // namespace

// The forward for a graph launched without MXNet's CachedOp (cpp/src/kernel_launch.h), with the
// interface of a fused program (fused_elemwise.cc): a plan from the node's attributes, then runs
// on float32 arrays of in_sizes / out_sizes elements, [X, W, (b)] -> [Y], the shapes following
// from the sizes and num_hidden. A run returns null, or why the arrays do not fit.
extern "C" __attribute__((visibility("default"))) void* minpy_fc_program_create(int num_attrs, const char* const* keys,
                                                                               const char* const* vals) {
  try {
    const Plan p = parse_plan(attr_map(num_attrs, keys, vals));
    if (p.num_hidden < 1 || !gemm::supported()) return nullptr;
    return new Plan(p);
  } catch (const std::exception&) {
    return nullptr;
  }
}

extern "C" __attribute__((visibility("default"))) void minpy_fc_program_free(void* program) {
  delete static_cast<Plan*>(program);
}

// M and K of data (`data` floats) by weight (`weight` floats: num_hidden x K); false where they
// do not fit.
bool product_dims(const Plan& p, int64_t data, int64_t weight, int64_t* M, int64_t* K) {
  *K = weight / p.num_hidden;
  if (*K < 1 || weight != p.num_hidden * *K || data % *K != 0) return false;
  *M = data / *K;
  return true;
}

extern "C" __attribute__((visibility("default"))) const char* minpy_fc_program_run(const void* program,
                                                                                  const float* const* in,
                                                                                  const int64_t* in_sizes,
                                                                                  float* const* out,
                                                                                  const int64_t* out_sizes) {
  const Plan& p = *static_cast<const Plan*>(program);
  const int64_t N = p.num_hidden;
  int64_t M = 0, K = 0;
  if (!product_dims(p, in_sizes[0], in_sizes[1], &M, &K)) return "_minpy_fc: data and weight sizes do not fit";
  if (out_sizes[0] != M * N || (p.bias && in_sizes[2] != N)) return "_minpy_fc: bias or output size does not fit";
  forward(p, in[0], in[1], p.bias ? in[2] : nullptr, out[0], M, K);
  return nullptr;
}

// _minpy_fc_grad in a direct launch, as minpy_fc_program_run for the forward: the plan is the
// node's attributes (minpy_fc_program_create), [dY, X, W, (Y with act=relu)] -> [dX, dW, (db)],
// a null output being a gradient nobody reads.
extern "C" __attribute__((visibility("default"))) const char* minpy_fc_grad_program_run(const void* program,
                                                                                       const float* const* in,
                                                                                       const int64_t* in_sizes,
                                                                                       float* const* out,
                                                                                       const int64_t* out_sizes) {
  const Plan& p = *static_cast<const Plan*>(program);
  const int64_t N = p.num_hidden;
  int64_t M = 0, K = 0;
  if (!product_dims(p, in_sizes[1], in_sizes[2], &M, &K)) return "_minpy_fc_grad: data and weight sizes do not fit";
  if (in_sizes[0] != M * N || out_sizes[0] != M * K || out_sizes[1] != N * K || (p.bias && out_sizes[2] != N))
    return "_minpy_fc_grad: a gradient's size does not fit";
  if (p.kc_data < 0 || p.kc_weight < 0) return "_minpy_fc_grad: gradients not checked against MXNet's";
  if (p.relu && in_sizes[3] != M * N) return "_minpy_fc_grad: the forward's output does not fit";
  backward(p, in[0], in[1], in[2], p.relu ? in[3] : nullptr, p.data_grad ? out[0] : nullptr,
           p.weight_grad ? out[1] : nullptr, p.bias ? out[2] : nullptr, M, K);
  return nullptr;
}

REGISTER_OP(_minpy_fc_grad)
    .setParseAttrs(grad_parse_attrs)
    .setInferType(infer_type)
    .setInferShape(grad_infer_shape)
    .setCreateOpState(create_grad_state, "cpu");

REGISTER_OP(_minpy_fc)
    .setParseAttrs(parse_attrs)
    .setInferType(infer_type)
    .setInferShape(infer_shape)
    .setCreateOpState(create_state, "cpu");

}  // namespace fc
}  // namespace minpy_kernels
