// MXNet's own small operators of a training step's loss, for graphs launched without CachedOp
// (cpp/src/kernel_launch.h): log_softmax and its gradient (oneDNN's bits, onednn_softmax.h),
// pick, mean, sum, a multiply by a scalar, nd.relu, ones_like, BlockGrad and the gradients
// MXNet's pass makes of them. Gluon's SoftmaxCrossEntropyLoss(...).mean() is ten of these nodes;
// with our GEMMs and update kernels they let W3's whole step run as one engine operation.
//
// Each op is written after MXNet 1.9.1's kernel for float32 on CPU (src/operator/tensor/
// broadcast_reduce_op.h: pick, pick_grad, ReduceAxesComputeImpl with mshadow_op::sum, which
// adds with a Kahan residual (reset once the sum is infinite), then for mean divides by the
// reduced count; ReduceAxesBackwardUseNone broadcasts (and for mean divides);
// elemwise_binary_scalar_op: x * float(scalar); NaN operands picked as the x86 instructions MXNet
// runs pick them). Only the forms listed at `create` are taken. Nothing here is trusted on reading alone: before a graph uses an op
// for a shape, the runtime runs MXNet's operator and this one on random data with specials
// and keeps the graph on CachedOp at the first differing bit (cpp/src/launch_check.cc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "attrs.h"
#include "onednn_softmax.h"

namespace minpy_kernels {
namespace step_ops {
namespace {

enum class Kind { kLogSoftmax, kLogSoftmaxGrad, kPick, kPickGrad, kMulScalar, kMean, kMeanGrad, kSum, kSumGrad,
                  kOnes, kCopy, kRelu, kReluGrad };

struct Program {
  Kind kind;
  int64_t outer = 1, inner = 1;  // rows and the length of each (softmax, pick, the reduced run of mean)
  int width = 0;                 // oneDNN's vector width for log_softmax
  float scalar = 0.f;
};

bool truthy(const std::string& v) { return v == "True" || v == "true" || v == "1"; }

// MXNet's axis attribute: "0", "(0,)", "(0, 1)", "()", "None" -> the axes (normalized), or
// false where it does not parse.
bool parse_axes(const AttrMap& attrs, int ndim, bool* all, std::vector<int>* axes) {
  auto it = attrs.find("axis");
  *all = it == attrs.end() || it->second == "None" || it->second == "()" || it->second == "[]";
  axes->clear();
  if (*all) return true;
  for (int64_t a : parse_int_tuple(it->second)) {
    if (a < -ndim || a >= ndim) return false;
    axes->push_back(static_cast<int>(a < 0 ? a + ndim : a));
  }
  return !axes->empty();
}

// mean's (and sum's) attributes over a `shape` -> (outer, inner) with the reduced axes the trailing ones,
// and the output shape; false for any other reduction.
bool mean_form(const AttrMap& attrs, int ndim, const int64_t* shape, Program* p, std::vector<int64_t>* out) {
  for (const auto& kv : attrs)
    if (kv.first != "axis" && kv.first != "exclude" && kv.first != "keepdims") return false;
  if (const char* safe = std::getenv("MXNET_SAFE_ACCUMULATION"))
    if (std::string(safe) != "0") return false;  // another accumulator type
  bool all = false;
  std::vector<int> axes;
  if (!parse_axes(attrs, ndim, &all, &axes)) return false;
  const bool exclude = truthy(attr_or(attrs, "exclude", "False"));
  const bool keepdims = truthy(attr_or(attrs, "keepdims", "False"));
  std::vector<char> reduced(ndim, all ? 1 : 0);
  if (!all)
    for (int a : axes) reduced[a] = 1;
  if (exclude)
    for (char& r : reduced) r = !r;
  int first = ndim;  // the reduced axes must be a suffix
  while (first > 0 && reduced[first - 1]) --first;
  for (int a = 0; a < first; ++a)
    if (reduced[a]) return false;
  if (first == ndim) return false;  // nothing reduced
  p->outer = p->inner = 1;
  out->clear();
  for (int a = 0; a < ndim; ++a) {
    if (a < first) {
      p->outer *= shape[a];
      out->push_back(shape[a]);
    } else {
      p->inner *= shape[a];
      if (keepdims) out->push_back(1);
    }
  }
  if (out->empty()) out->push_back(1);
  return p->inner > 0;
}

// Rows of the last axis, for the ops that take only that axis.
bool last_axis_rows(const AttrMap& attrs, int ndim, const int64_t* shape, const char* dflt, Program* p) {
  const int64_t axis = parse_int(attr_or(attrs, "axis", dflt));
  if (ndim < 1 || (axis != -1 && axis != ndim - 1)) return false;
  p->inner = shape[ndim - 1];
  p->outer = 1;
  for (int a = 0; a < ndim - 1; ++a) p->outer *= shape[a];
  return p->inner > 0 && p->outer > 0;
}

bool only(const AttrMap& attrs, std::initializer_list<const char*> keys) {
  for (const auto& kv : attrs) {
    bool known = false;
    for (const char* k : keys) known = known || kv.first == k;
    if (!known) return false;
  }
  return true;
}

// pick's index: static_cast<index_t>(float) as x86-64 does it (an out-of-range or NaN value
// gives INT64_MIN), then mode='clip'.
inline int64_t pick_column(float v, int64_t cols) {
  int64_t j;
  if (!(v > -9.2233720368547758e18f && v < 9.2233720368547758e18f)) j = std::numeric_limits<int64_t>::min();
  else j = static_cast<int64_t>(v);
  if (j <= 0) return 0;
  return j >= cols ? cols - 1 : j;
}

// mshadow_op::sum's Reduce: a Kahan-compensated running sum whose residual is dropped once the
// sum is infinite (src/operator/mshadow_op.h).
inline float kahan_sum(const float* x, int64_t n) {
  float sum = 0.f, residual = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    const float y = x[i] - residual;
    const float t = add_x86(sum, y);
    residual = std::isinf(t) ? 0.f : (t - sum) - y;
    sum = t;
  }
  return sum;
}

Program* create(const std::string& op, const AttrMap& attrs, int ndim, const int64_t* shape,
                std::vector<int64_t>* out) {
  Program p{Kind::kCopy};
  out->assign(shape, shape + ndim);
  if (op == "log_softmax" || op == "_backward_log_softmax") {
    // oneDNN runs it only without temperature or a dtype override, for 1-4 axes (onednn_softmax.h)
    if (!only(attrs, {"axis"}) || ndim > 4 || !last_axis_rows(attrs, ndim, shape, "-1", &p)) return nullptr;
    p.kind = op == "log_softmax" ? Kind::kLogSoftmax : Kind::kLogSoftmaxGrad;
    p.width = onednn_softmax_vector_width();
    if (p.width == 0) return nullptr;
  } else if (op == "pick" || op == "_backward_pick") {
    if (!only(attrs, {"axis", "keepdims", "mode"}) || attr_or(attrs, "mode", "clip") != "clip" ||
        !last_axis_rows(attrs, ndim, shape, "-1", &p))
      return nullptr;
    p.kind = op == "pick" ? Kind::kPick : Kind::kPickGrad;
    if (p.kind == Kind::kPick) {
      if (truthy(attr_or(attrs, "keepdims", "False"))) out->back() = 1;
      else out->pop_back();
      if (out->empty()) out->push_back(1);
    }
  } else if (op == "_mul_scalar" || op == "_backward_mul_scalar") {
    if (!only(attrs, {"scalar", "is_int"}) || truthy(attr_or(attrs, "is_int", "False"))) return nullptr;
    p.kind = Kind::kMulScalar;
    p.scalar = static_cast<float>(std::strtod(attr(attrs, "scalar").c_str(), nullptr));
  } else if (op == "mean" || op == "_backward_mean" || op == "sum" || op == "_backward_sum") {
    std::vector<int64_t> reduced;
    if (!mean_form(attrs, ndim, shape, &p, &reduced)) return nullptr;
    const bool mean = op == "mean" || op == "_backward_mean", forward = op[0] != '_';
    p.kind = mean ? (forward ? Kind::kMean : Kind::kMeanGrad) : (forward ? Kind::kSum : Kind::kSumGrad);
    if (forward) *out = reduced;
  } else if (op == "relu" || op == "_backward_relu") {  // nd.relu (not Activation's), its gradient from the output
    if (!attrs.empty()) return nullptr;
    p.kind = op == "relu" ? Kind::kRelu : Kind::kReluGrad;
  } else if (op == "ones_like") {
    if (!attrs.empty()) return nullptr;
    p.kind = Kind::kOnes;
  } else if (op == "BlockGrad" || op == "stop_gradient") {
    if (!attrs.empty()) return nullptr;
    p.kind = Kind::kCopy;
  } else {
    return nullptr;
  }
  return new Program(p);
}

// Element counts of inputs and the output, as the program expects them.
bool sizes_fit(const Program& p, const int64_t* in, const int64_t* out) {
  const int64_t n = p.outer * p.inner;
  switch (p.kind) {
    case Kind::kLogSoftmax: return in[0] == n && out[0] == n;
    case Kind::kLogSoftmaxGrad: return in[0] == n && in[1] == n && out[0] == n;
    case Kind::kPick: return in[0] == n && in[1] == p.outer && out[0] == p.outer;
    case Kind::kPickGrad: return in[0] == p.outer && in[1] == p.outer && out[0] == n;
    case Kind::kMean:
    case Kind::kSum: return in[0] == n && out[0] == p.outer;
    case Kind::kMeanGrad:
    case Kind::kSumGrad: return in[0] == p.outer && out[0] == n;
    case Kind::kReluGrad: return in[0] == out[0] && in[1] == out[0];
    default: return in[0] == out[0];
  }
}

void run(const Program& p, const float* const* in, float* out, int64_t out_size) {
  const int64_t rows = p.outer, cols = p.inner;
  switch (p.kind) {
    case Kind::kLogSoftmax:
      if (p.width == 16) log_softmax_rows_forward_avx512(in[0], out, rows, cols);
      else log_softmax_rows_forward(in[0], out, rows, cols, p.width);
      break;
    case Kind::kLogSoftmaxGrad:
      if (p.width == 16) log_softmax_rows_backward_avx512(in[0], in[1], out, rows, cols);
      else log_softmax_rows_backward(in[0], in[1], out, rows, cols, p.width);
      break;
    case Kind::kPick:
      for (int64_t r = 0; r < rows; ++r) out[r] = in[0][r * cols + pick_column(in[1][r], cols)];
      break;
    case Kind::kPickGrad:  // zero-filled, then added to: 0 + g (a -0 gradient becomes +0)
      std::memset(out, 0, sizeof(float) * rows * cols);
      for (int64_t r = 0; r < rows; ++r) out[r * cols + pick_column(in[1][r], cols)] += in[0][r];
      break;
    case Kind::kMulScalar:
      for (int64_t i = 0; i < out_size; ++i) out[i] = mul_x86(in[0][i], p.scalar);
      break;
    case Kind::kMean: {
      const float count = static_cast<float>(cols);
      for (int64_t r = 0; r < rows; ++r) out[r] = kahan_sum(in[0] + r * cols, cols) / count;
      break;
    }
    case Kind::kMeanGrad: {
      const float count = static_cast<float>(cols);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = in[0][r] / count;
      break;
    }
    case Kind::kSum:
      for (int64_t r = 0; r < rows; ++r) out[r] = kahan_sum(in[0] + r * cols, cols);
      break;
    case Kind::kSumGrad:  // broadcast back
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = in[0][r];
      break;
    case Kind::kOnes:
      for (int64_t i = 0; i < out_size; ++i) out[i] = 1.f;
      break;
    case Kind::kRelu:  // a NaN kept
      for (int64_t i = 0; i < out_size; ++i) out[i] = in[0][i] != in[0][i] ? in[0][i] : (in[0][i] > 0.f ? in[0][i] : 0.f);
      break;
    case Kind::kReluGrad:  // [dy, y]: unary_bwd<relu_grad>, dy * relu_grad(y)
      for (int64_t i = 0; i < out_size; ++i) {
        const float y = in[1][i];
        out[i] = mul_x86(y != y ? y : (y > 0.f ? 1.f : 0.f), in[0][i]);  // relu_grad keeps a NaN; it is the NaN kept when both are
      }
      break;
    case Kind::kCopy:
      if (out != in[0]) std::memcpy(out, in[0], sizeof(float) * out_size);
      break;
  }
}

}  // namespace
}  // namespace step_ops
}  // namespace minpy_kernels

using namespace minpy_kernels;

// A program for MXNet op `op` with these attributes on float32 data of `shape` (the first
// input's; for a _backward_ op, the shape of the gradient it makes, its forward's first input),
// and the shape of its one output in out_shape (out_ndim: at most 8 axes); null if this form of
// the op is not one of ours.
extern "C" __attribute__((visibility("default"))) void* minpy_step_op_create(const char* op, int num_attrs,
                                                                            const char* const* keys,
                                                                            const char* const* vals, int ndim,
                                                                            const int64_t* shape, int* out_ndim,
                                                                            int64_t* out_shape) {
  try {
    std::vector<int64_t> out;
    step_ops::Program* p = step_ops::create(op, attr_map(num_attrs, keys, vals), ndim, shape, &out);
    if (!p || out.size() > 8) {
      delete p;
      return nullptr;
    }
    *out_ndim = static_cast<int>(out.size());
    std::copy(out.begin(), out.end(), out_shape);
    return p;
  } catch (const std::exception&) {
    return nullptr;
  }
}

extern "C" __attribute__((visibility("default"))) void minpy_step_op_free(void* program) {
  delete static_cast<step_ops::Program*>(program);
}

extern "C" __attribute__((visibility("default"))) const char* minpy_step_op_run(const void* program,
                                                                               const float* const* in,
                                                                               const int64_t* in_sizes,
                                                                               float* const* out,
                                                                               const int64_t* out_sizes) {
  const auto& p = *static_cast<const step_ops::Program*>(program);
  if (!step_ops::sizes_fit(p, in_sizes, out_sizes)) return "an array's size does not fit the operator's shape";
  if (out[0]) step_ops::run(p, in, out[0], out_sizes[0]);
  return nullptr;
}
