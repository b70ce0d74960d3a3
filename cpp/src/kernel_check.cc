#include "kernel_check.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "executor.h"
#include "failures.h"

namespace minpy {

std::string canonical_attrs(std::vector<Attr> attrs) {
  std::sort(attrs.begin(), attrs.end(), [](const Attr& a, const Attr& b) { return a.key < b.key; });
  std::string s;
  for (const Attr& a : attrs) s += a.key + "=" + a.val + ";";
  return s;
}

NDArrayHandle array_of(const AVal& a, const float* data, OwnedArrays* held) {
  uint32_t dims[AVal::kMaxDim];
  for (int i = 0; i < a.ndim; ++i) dims[i] = static_cast<uint32_t>(a.dims[i]);
  NDArrayHandle h = nullptr;
  if (MXNDArrayCreateEx(dims, a.ndim, a.dev_type, a.dev_id, 0, a.dtype, &h) != 0) return nullptr;
  held->handles.push_back(h);
  const size_t n = static_cast<size_t>(a.size());
  if (without_gil([&] { return MXNDArraySyncCopyFromCPU(h, data, n); }) != 0) return nullptr;
  return h;
}

NDArrayHandle padded_array(const std::vector<float>& x, const AVal& like, OwnedArrays* held) {
  std::vector<float> padded(x.size() + 1, 0.0f);
  std::copy(x.begin(), x.end(), padded.begin() + 1);
  AVal line = like;
  line.ndim = 1;
  line.dims[0] = static_cast<int64_t>(padded.size());
  return array_of(line, padded.data(), held);
}

NDArrayHandle block_view(NDArrayHandle flat, int64_t start, int64_t rows, int64_t in, OwnedArrays* held) {
  NDArrayHandle part = nullptr, shaped = nullptr;
  if (MXNDArraySlice64(flat, start, start + rows * in, &part) != 0) return nullptr;
  held->handles.push_back(part);
  int64_t dims[2] = {rows, in};
  if (MXNDArrayReshape64(part, 2, dims, false, &shaped) != 0) return nullptr;
  held->handles.push_back(shaped);
  return shaped;
}

bool read_floats(NDArrayHandle h, size_t size, std::vector<float>* out) {
  out->resize(size);
  return without_gil([&] { return MXNDArraySyncCopyToCPU(h, out->data(), size); }) == 0;
}

NDArrayHandle invoke_op(AtomicSymbolCreator creator, std::vector<const char*> keys, std::vector<const char*> vals,
                        std::vector<NDArrayHandle> inputs, OwnedArrays* held) {
  int n_out = 0;
  NDArrayHandle* results = nullptr;
  NDArrayHandle result = nullptr;
  const int rc = without_gil([&] {
    int r = MXImperativeInvoke(creator, static_cast<int>(inputs.size()), inputs.data(), &n_out, &results,
                               static_cast<int>(keys.size()), keys.data(), vals.data());
    if (r == 0 && n_out >= 1) result = results[0];  // MXNet's thread-local list: read at once
    for (int i = 1; r == 0 && i < n_out; ++i) held->handles.push_back(results[i]);
    return r;
  });
  if (rc != 0 || !result) return nullptr;
  held->handles.push_back(result);
  return result;
}

bool run_op(AtomicSymbolCreator creator, std::vector<const char*> keys, std::vector<const char*> vals,
            std::vector<NDArrayHandle> inputs, size_t out_size, std::vector<float>* out, OwnedArrays* held) {
  NDArrayHandle result = invoke_op(creator, std::move(keys), std::move(vals), std::move(inputs), held);
  return result && read_floats(result, out_size, out);
}

// `creator` with `keys`/`vals` on x, forward and backward under autograd (head gradient g):
// its output and x's gradient (false on any failure).
bool forward_backward(AtomicSymbolCreator creator, std::vector<const char*> keys, std::vector<const char*> vals,
                      const AVal& a, const std::vector<float>& x, const std::vector<float>& g, bool training,
                      std::vector<float>* y, std::vector<float>* dx) {
  OwnedArrays held;
  NDArrayHandle hx = array_of(a, x.data(), &held), hg = array_of(a, g.data(), &held);
  std::vector<float> zeros(x.size(), 0.0f);
  NDArrayHandle gx = array_of(a, zeros.data(), &held);
  if (!hx || !hg || !gx) return false;
  uint32_t req = 1;  // write
  if (MXAutogradMarkVariables(1, &hx, &req, &gx) != 0) return false;
  NDArrayHandle out = nullptr;
  {
    AutogradState recording(true, training);
    out = invoke_op(creator, keys, vals, {hx}, &held);
  }
  if (!out) return false;
  const int rc = without_gil(
      [&] { return MXAutogradBackwardEx(1, &out, &hg, 0, nullptr, 0, 0, training ? 1 : 0, nullptr, nullptr); });
  return rc == 0 && read_floats(out, x.size(), y) && read_floats(gx, x.size(), dx);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool checks_deferred() { return errors_may_be_pending(); }

bool checked_once(const std::string& key, const std::function<bool()>& check) {
  static std::mutex mu;
  static std::map<std::string, bool> known;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known.find(key);
    if (it != known.end()) return it->second;
  }
  if (checks_deferred()) return false;
  const bool ok = check();
  std::lock_guard<std::mutex> lock(mu);
  known[key] = ok;
  return ok;
}

}  // namespace minpy
