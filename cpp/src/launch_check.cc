// The bit check of the kernel library's stand-ins for MXNet's small operators (step_ops.cc):
// see launch_check.h.
#include "launch_check.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include "kernel_check.h"
#include "mxapi.h"

namespace minpy {

namespace {

// Values an input of `op` gets: wide magnitudes, and on the later draws the specials (NaN,
// +-inf, +-0, subnormals, +-FLT_MAX). An index (pick's second input) gets columns in and out of
// range, fractions, negative, huge and NaN values.
float draw_value(DrawSource& src, int draw, bool index, int64_t cols) {
  const float u = src.value(Draw::kWide);
  if (index) {
    static const float specials[] = {std::nanf(""), INFINITY, -INFINITY, 3e30f, -3e30f, -0.0f, -1.0f, 0.5f};
    const uint32_t pick = static_cast<uint32_t>(std::fabs(u) * 1e6f) % 16;
    if (draw > 0 && pick < 8) return specials[pick];
    return std::floor((u + 16.0f) / 32.0f * static_cast<float>(cols + 4)) - 2.0f + (pick == 9 ? 0.75f : 0.0f);
  }
  if (draw == 0) return u;
  static const float specials[] = {std::nanf(""), -std::nanf(""), INFINITY, -INFINITY, 0.0f, -0.0f,
                                   1e-40f,        -3e-42f,        FLT_MAX,  -FLT_MAX, 1.0f, -1.0f};
  const uint32_t pick = static_cast<uint32_t>(std::fabs(u) * 1e6f) % 64;
  if (pick < 12) return specials[pick];
  return draw == 1 ? u : std::ldexp(u, static_cast<int>(pick) - 40);
}

AVal aval_of_shape(const std::vector<int64_t>& shape, int dev_id) {
  AVal a;
  a.ndim = static_cast<int>(shape.size());
  for (int i = 0; i < a.ndim; ++i) a.dims[i] = shape[i];
  a.dev_id = dev_id;
  return a;
}

// MXNet's operator on `ins`, writing into an array of `out_shape` it is given (MXNet's gradient
// ops infer no shape of their own), read back (false on any failure).
bool mxnet_result(OpHandle op, const std::vector<Attr>& attrs, const std::vector<NDArrayHandle>& ins,
                  const AVal& out_aval, std::vector<float>* out, OwnedArrays* held) {
  std::vector<float> zeros(static_cast<size_t>(out_aval.size()), 0.0f);
  NDArrayHandle result = array_of(out_aval, zeros.data(), held);
  if (!result) return false;
  std::vector<const char*> keys, vals;
  for (const Attr& a : attrs) keys.push_back(a.key.c_str()), vals.push_back(a.val.c_str());
  int n_out = 1;
  NDArrayHandle* outs = &result;
  const int rc = without_gil([&] {
    return MXImperativeInvoke(op, static_cast<int>(ins.size()), const_cast<NDArrayHandle*>(ins.data()), &n_out,
                              &outs, static_cast<int>(keys.size()), keys.data(), vals.data());
  });
  return rc == 0 && read_floats(result, zeros.size(), out);
}

}  // namespace

bool step_op_agrees(const std::string& op, const std::vector<Attr>& attrs,
                    const std::vector<std::vector<int64_t>>& in_shapes, const std::vector<int64_t>& out_shape,
                    const void* program, FusedProgramRun run, int dev_id) {
  std::string key = "step " + op + canonical_attrs(attrs) + " dev" + std::to_string(dev_id) + " in";
  for (const auto& s : in_shapes) {
    for (int64_t d : s) key += " " + std::to_string(d);
    key += ";";
  }
  for (int64_t d : out_shape) key += " " + std::to_string(d);
  return checked_once(key, [&] {
    OpHandle handle = nullptr;
    if (NNGetOpHandle(op.c_str(), &handle) != 0 || !handle) return false;
    const AVal out_aval = aval_of_shape(out_shape, dev_id);
    const bool picks = op == "pick" || op == "_backward_pick";
    const int64_t cols = in_shapes.empty() || in_shapes[0].empty() ? 1 : in_shapes[0].back();
    DrawSource src(static_cast<uint64_t>(std::hash<std::string>()(key)));
    for (int draw = 0; draw < 3; ++draw) {
      OwnedArrays held;
      RecordingPaused no_recording;
      std::vector<std::vector<float>> data(in_shapes.size());
      std::vector<NDArrayHandle> ins;
      std::vector<const float*> in_ptrs;
      std::vector<int64_t> in_sizes;
      for (size_t i = 0; i < in_shapes.size(); ++i) {
        const AVal a = aval_of_shape(in_shapes[i], dev_id);
        data[i].resize(static_cast<size_t>(a.size()));
        for (float& v : data[i]) v = draw_value(src, draw, picks && i == 1, cols);
        NDArrayHandle h = array_of(a, data[i].data(), &held);
        if (!h) return false;
        ins.push_back(h);
        in_ptrs.push_back(data[i].data());
        in_sizes.push_back(a.size());
      }
      std::vector<float> theirs, ours(static_cast<size_t>(out_aval.size()));
      if (!mxnet_result(handle, attrs, ins, out_aval, &theirs, &held)) return false;
      float* out_ptr = ours.data();
      const int64_t out_size = out_aval.size();
      if (run(program, in_ptrs.data(), in_sizes.data(), &out_ptr, &out_size)) return false;
      if (!same_bits(ours, theirs)) return false;
    }
    return true;
  });
}

}  // namespace minpy
