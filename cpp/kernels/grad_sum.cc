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
#include "parallel.h"
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

// A thread needs this many elements (times inputs) to pay for waking it. Measured
// (benchmarks/kernel_threads.py --only sum, load 2.5, per call 1 thread / 2 threads): 0.86-1.00x
// from 65,536 to 262,144 elements of two inputs, 1.19x at 1M, 0.95x at 4M (out of cache).
constexpr int64_t kMinElemsPerThread = int64_t(1) << 19;
// Elements a thread takes at a time: each input's chunk stays in L2 while it is added.
constexpr int64_t kChunk = int64_t(1) << 14;

// out = in[0] + in[1] + ... element by element, on up to two threads. Each element is summed
// left to right by the same code whichever thread runs it, so the split never changes a bit.
// `out` may be an input's memory only if it is in[0]'s (copied first, element by element).
template <typename T, typename Add>
void sum(std::vector<MXTensor>& in, MXTensor& out, Add add) {
  const int64_t n = out.size();
  T* o = static_cast<T*>(out.data_ptr);
  std::vector<const T*> src;
  for (const MXTensor& t : in) src.push_back(static_cast<const T*>(t.data_ptr));
  const int threads = threads_for_work(n * static_cast<int64_t>(src.size()), kMinElemsPerThread);
  parallel_chunks(n, kChunk, threads, [&](int64_t begin, int64_t end) {
    const T* a = src[0];
    for (int64_t i = begin; i < end; ++i) o[i] = a[i];
    for (size_t k = 1; k < src.size(); ++k) {
      const T* b = src[k];
      for (int64_t i = begin; i < end; ++i) o[i] = add(o[i], b[i]);
    }
  });
}

// Function objects, not function pointers: a call through a pointer would not inline, and the
// loop would not vectorize.
struct Plus {
  template <typename T>
  T operator()(T a, T b) const { return a + b; }
};

// float16 as bits, rounded after every addition as mshadow's half_t arithmetic does.
struct PlusHalf {
  uint16_t operator()(uint16_t a, uint16_t b) const { return float_to_half(half_to_float(a) + half_to_float(b)); }
};

MXReturnValue forward(const AttrMap&, std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                      const OpResource&) {
  MXTensor& out = (*outputs)[0];
  for (const MXTensor& t : *inputs)
    if (t.size() != out.size() || t.dtype != out.dtype) {
      MX_ERROR_MSG << "elemwise_sum: inputs and output differ in size or type";
      return MX_FAIL;
    }
  switch (out.dtype) {
    case kFloat32: sum<float>(*inputs, out, Plus()); break;
    case kFloat64: sum<double>(*inputs, out, Plus()); break;
    case kFloat16: sum<uint16_t>(*inputs, out, PlusHalf()); break;
    default:
      MX_ERROR_MSG << "elemwise_sum: float32, float64 or float16 only";
      return MX_FAIL;
  }
  return MX_SUCCESS;
}

}  // namespace

// The op in a graph launched without CachedOp (cpp/src/kernel_launch.h): the plan is the number
// of inputs; a run sums float32 arrays with the op's own loop (the same instructions, so the
// same NaN where two meet). Null, or why the arrays do not fit.
extern "C" __attribute__((visibility("default"))) void* minpy_grad_sum_program_create(int num_attrs,
                                                                                     const char* const* keys,
                                                                                     const char* const* vals) {
  try {
    const int64_t n = parse_int(attr(attr_map(num_attrs, keys, vals), "num_args"));
    return n >= 1 ? new int64_t(n) : nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
}

extern "C" __attribute__((visibility("default"))) void minpy_grad_sum_program_free(void* program) {
  delete static_cast<int64_t*>(program);
}

extern "C" __attribute__((visibility("default"))) const char* minpy_grad_sum_program_run(const void* program,
                                                                                        const float* const* in,
                                                                                        const int64_t* in_sizes,
                                                                                        float* const* out,
                                                                                        const int64_t* out_sizes) {
  const int64_t n = *static_cast<const int64_t*>(program);
  std::vector<MXTensor> inputs(n), outputs(1);
  for (int64_t k = 0; k < n; ++k) {
    if (in_sizes[k] != out_sizes[0]) return "elemwise_sum: inputs and output differ in size";
    inputs[k].data_ptr = const_cast<float*>(in[k]);
  }
  outputs[0].data_ptr = out[0];
  outputs[0].shape = {out_sizes[0]};
  if (out[0]) sum<float>(inputs, outputs[0], Plus());
  return nullptr;
}

REGISTER_OP(elemwise_sum)
    .setParseAttrs(parse_attrs)
    .setInferType(infer_type)
    .setInferShape(infer_shape)
    .setForward(forward, "cpu");

}  // namespace minpy_kernels
