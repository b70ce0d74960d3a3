// _minpy_log_softmax: log_softmax over the last axis of float32 data, MXNet's bits, computed by
// onednn_softmax.h's reproduction of the oneDNN kernel MXNet's wheel runs.
//
// Why: MXNet's operator is a few microseconds of arithmetic on a classifier's logits (W3: 64
// rows of 10) behind 7 (forward) and 19 (backward) microseconds of oneDNN set-up a call in
// the profile. The runtime puts this op in a graph in place of log_softmax only after checking
// MXNet's operator against it, forward and backward, for that row length and training flag
// (cpp/src/exact_softmax.h). Attribute `width`: oneDNN's vector width the check confirmed (16:
// its AVX-512 kernels; 8: AVX2, whose backward is oneDNN's reference code).
//
// Backward (MXNet makes _backward__minpy_log_softmax, handing it this node's state): inputs
// [dY, X, Y], output dX, from Y as MXNet's backward (it hands oneDNN the forward's output).
// Written, never added: the runtime uses the op only in graphs MXNet's autograd does not record.
//
// _minpy_log_softmax_grad: that backward as an op of its own, inputs [dY, Y], output dX; the
// runtime puts it where MXNet's gradient pass made _backward__minpy_log_softmax, a node without
// a gradient that CachedOp would need a BlockGrad after (as _minpy_fc_grad, fc_op.cc).
#include <stdexcept>
#include <string>
#include <vector>

#include "mxnet/lib_api.h"

#include "attrs.h"
#include "onednn_softmax.h"

using namespace mxnet::ext;

namespace minpy_kernels {
namespace log_softmax {
namespace {

MXReturnValue report(const std::exception& e) {
  MX_ERROR_MSG << "_minpy_log_softmax: " << e.what();
  return MX_FAIL;
}

int parse_width(const AttrMap& attrs) {
  const int64_t w = parse_int(attr(attrs, "width"));
  if (w != 16 && w != 8) throw std::runtime_error("attribute 'width' must be 16 or 8");
  return static_cast<int>(w);
}

// Rows and columns of a tensor's last axis (at least 1-D).
void rows_cols(const MXTensor& t, int64_t* rows, int64_t* cols) {
  if (t.shape.empty()) throw std::runtime_error("data must have an axis");
  *cols = t.shape.back();
  *rows = *cols ? const_cast<MXTensor&>(t).size() / *cols : 0;
}

const float* in_floats(const MXTensor& t, int64_t size, const char* what) {
  if (t.dtype != kFloat32 || const_cast<MXTensor&>(t).size() != size || (size && !t.data_ptr))
    throw std::runtime_error(std::string(what) + " must be float32 of " + std::to_string(size) + " elements");
  return static_cast<const float*>(t.data_ptr);
}

// dX from [dY, ..., Y] (the output gradient first, the forward's output last).
MXReturnValue gradient(int width, std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs) {
  try {
    int64_t rows = 0, cols = 0;
    rows_cols(inputs->back(), &rows, &cols);
    const float* dy = in_floats((*inputs)[0], rows * cols, "output gradient");
    const float* y = in_floats(inputs->back(), rows * cols, "output");
    MXTensor& out = (*outputs)[0];
    if (!out.data_ptr) return MX_SUCCESS;  // not wanted (kNullOp)
    float* dx = const_cast<float*>(in_floats(out, rows * cols, "data gradient"));
    if (!log_softmax_rows_backward(dy, y, dx, rows, cols, width)) throw std::runtime_error("unsupported width");
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

class LogSoftmaxState : public CustomStatefulOp {
 public:
  explicit LogSoftmaxState(int width) : width_(width) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource&) override {
    try {
      int64_t rows = 0, cols = 0;
      rows_cols((*inputs)[0], &rows, &cols);
      const float* x = in_floats((*inputs)[0], rows * cols, "data");
      float* y = const_cast<float*>(in_floats((*outputs)[0], rows * cols, "output"));
      if (!log_softmax_rows_forward(x, y, rows, cols, width_)) throw std::runtime_error("unsupported width");
      return MX_SUCCESS;
    } catch (const std::exception& e) { return report(e); }
  }

  MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource&) override {
    return gradient(width_, inputs, outputs);
  }

 private:
  int width_;
};

class LogSoftmaxGradState : public CustomStatefulOp {
 public:
  explicit LogSoftmaxGradState(int width) : width_(width) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs, const OpResource&) override {
    return gradient(width_, inputs, outputs);
  }

  MXReturnValue Backward(std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) override {
    MX_ERROR_MSG << "_minpy_log_softmax_grad: no second derivative (the op is used only in graphs autograd does "
                    "not record)";
    return MX_FAIL;
  }

 private:
  int width_;
};

MXReturnValue parse_attrs(const AttrMap& attrs, int* num_in, int* num_out) {
  try {
    parse_width(attrs);
    *num_in = 1;
    *num_out = 1;
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue grad_parse_attrs(const AttrMap& attrs, int* num_in, int* num_out) {
  try {
    parse_width(attrs);
    *num_in = 2;
    *num_out = 1;
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue infer_type(const AttrMap&, std::vector<int>* in_types, std::vector<int>* out_types) {
  for (size_t j = 0; j < in_types->size(); ++j)
    if ((*in_types)[j] != kFloat32) {
      MX_ERROR_MSG << "_minpy_log_softmax: input " << j << " must be float32";
      return MX_FAIL;
    }
  for (auto& t : *out_types) t = kFloat32;
  return MX_SUCCESS;
}

// The output has the shape of the last input (the data; the forward's output for the gradient).
MXReturnValue infer_shape(const AttrMap&, std::vector<std::vector<unsigned int>>* in_shapes,
                          std::vector<std::vector<unsigned int>>* out_shapes) {
  (*out_shapes)[0] = in_shapes->back();
  return MX_SUCCESS;
}

MXReturnValue create_state(const AttrMap& attrs, const MXContext&, const std::vector<std::vector<unsigned int>>&,
                           const std::vector<int>, CustomStatefulOp** state) {
  try {
    *state = CustomStatefulOp::create<LogSoftmaxState>(parse_width(attrs));
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue create_grad_state(const AttrMap& attrs, const MXContext&, const std::vector<std::vector<unsigned int>>&,
                                const std::vector<int>, CustomStatefulOp** state) {
  try {
    *state = CustomStatefulOp::create<LogSoftmaxGradState>(parse_width(attrs));
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

}  // namespace

REGISTER_OP(_minpy_log_softmax)
    .setParseAttrs(parse_attrs)
    .setInferType(infer_type)
    .setInferShape(infer_shape)
    .setCreateOpState(create_state, "cpu");

REGISTER_OP(_minpy_log_softmax_grad)
    .setParseAttrs(grad_parse_attrs)
    .setInferType(infer_type)
    .setInferShape(infer_shape)
    .setCreateOpState(create_grad_state, "cpu");

}  // namespace log_softmax
}  // namespace minpy_kernels

// The vector width oneDNN's softmax uses on this CPU (16, 8; 0: a kernel not reproduced).
extern "C" __attribute__((visibility("default"))) int minpy_onednn_softmax_width() {
  return minpy_kernels::onednn_softmax_vector_width();
}
