// elemwise_sum: the sum of gradient contributions NNVM's gradient pass puts where one value
// feeds two ops (its default aggregation names this op; MXNet 1.9.1 registers none by that
// name, and a gradient graph built through the C API cannot name MXNet's own aggregation).
// The runtime asks the pass for a backward() run inside its graph (cpp/src/grad_graph.cc).
//
// Same result as MXNet's ElementWiseSum, which eager autograd uses there: inputs added left
// to right in the array's own type (float16 rounded after every addition, as mshadow's
// half_t arithmetic does). The runtime only lets the pass sum two contributions, and
// a + b is b + a, so the order in which the pass lists them does not matter.
#include <cstdint>
#include <string>
#include <vector>

#include "mxnet/lib_api.h"

#include "attrs.h"
#include "update_rules.h"

using namespace mxnet::ext;

namespace minpy_kernels {
namespace {

MXReturnValue parse_attrs(const AttrMap& attrs, int* num_in, int* num_out) {
  try {
    *num_in = static_cast<int>(parse_int(attr(attrs, "num_args")));
    *num_out = 1;
    if (*num_in < 1) throw std::runtime_error("num_args must be >= 1");
    return MX_SUCCESS;
  } catch (const std::exception& e) {
    MX_ERROR_MSG << "elemwise_sum: " << e.what();
    return MX_FAIL;
  }
}

MXReturnValue infer_type(const AttrMap&, std::vector<int>* in_types, std::vector<int>* out_types) {
  const int t = (*in_types)[0];
  if (t != kFloat32 && t != kFloat64 && t != kFloat16) {
    MX_ERROR_MSG << "elemwise_sum: float32, float64 or float16 only";
    return MX_FAIL;
  }
  for (int u : *in_types)
    if (u != t) {
      MX_ERROR_MSG << "elemwise_sum: all inputs must have one type";
      return MX_FAIL;
    }
  (*out_types)[0] = t;
  return MX_SUCCESS;
}

MXReturnValue infer_shape(const AttrMap&, std::vector<std::vector<unsigned int>>* in_shapes,
                          std::vector<std::vector<unsigned int>>* out_shapes) {
  for (const auto& s : *in_shapes)
    if (s != (*in_shapes)[0]) {
      MX_ERROR_MSG << "elemwise_sum: all inputs must have one shape";
      return MX_FAIL;
    }
  (*out_shapes)[0] = (*in_shapes)[0];
  return MX_SUCCESS;
}

template <typename T>
void sum(std::vector<MXTensor>& in, MXTensor& out) {
  const int64_t n = out.size();
  T* o = out.data<T>();
  const T* a = in[0].data<T>();
  for (int64_t i = 0; i < n; ++i) o[i] = a[i];  // `out` may be an input's memory only if it is in[0]'s
  for (size_t k = 1; k < in.size(); ++k) {
    const T* b = in[k].data<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = o[i] + b[i];
  }
}

void sum_half(std::vector<MXTensor>& in, MXTensor& out) {
  const int64_t n = out.size();
  auto* o = static_cast<uint16_t*>(out.data_ptr);
  const auto* a = static_cast<const uint16_t*>(in[0].data_ptr);
  for (int64_t i = 0; i < n; ++i) o[i] = a[i];
  for (size_t k = 1; k < in.size(); ++k) {
    const auto* b = static_cast<const uint16_t*>(in[k].data_ptr);
    for (int64_t i = 0; i < n; ++i) o[i] = float_to_half(half_to_float(o[i]) + half_to_float(b[i]));
  }
}

MXReturnValue forward(const AttrMap&, std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                      const OpResource&) {
  MXTensor& out = (*outputs)[0];
  for (const MXTensor& t : *inputs)
    if (t.size() != out.size() || t.dtype != out.dtype) {
      MX_ERROR_MSG << "elemwise_sum: inputs and output differ in size or type";
      return MX_FAIL;
    }
  switch (out.dtype) {
    case kFloat32: sum<float>(*inputs, out); break;
    case kFloat64: sum<double>(*inputs, out); break;
    case kFloat16: sum_half(*inputs, out); break;
    default:
      MX_ERROR_MSG << "elemwise_sum: float32, float64 or float16 only";
      return MX_FAIL;
  }
  return MX_SUCCESS;
}

}  // namespace

REGISTER_OP(elemwise_sum)
    .setParseAttrs(parse_attrs)
    .setInferType(infer_type)
    .setInferShape(infer_shape)
    .setForward(forward, "cpu");

}  // namespace minpy_kernels
