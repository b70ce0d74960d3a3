// Reading the mxnet::NDArray object behind a handle without going through the C API:
//  * its abstract value (shape, dtype, context, storage), instead of four C API calls --
//    a new external input costs ~1.5 us through the C API; W5's update step has 600;
//  * its storage chunk, for the alias check at a flush (see chunk_of);
//  * whether it is part of an autograd graph (see in_autograd_graph): no C API asks that.
//
// NDArray keeps shape_, dtype_ and storage_type_ as its own leading members, and its
// storage chunk's first member is the Storage::Handle holding the context, so no member
// behind a build option is touched. The reading is checked against the C API on real
// arrays before it is trusted (see peek_works); unusual arrays (unknown or zero dims,
// 0-d, non-default storage) always go through the C API.
//
// The wheel is built with MKLDNN, but its headers are not shipped: compile without it.
// That only removes members declared after everything read here.
// libmxnet.so uses the pre-C++11 std::string (its symbols have no __cxx11 tag): so must this
// file, or nnvm::Node's members behind its std::string fields sit at other offsets. Nothing
// declared here passes a std::string to another file of the extension.
#define _GLIBCXX_USE_CXX11_ABI 0
#undef MXNET_USE_MKLDNN
#define MXNET_USE_MKLDNN 0
#define MSHADOW_USE_MKL 0  // likewise BLAS and CUDA headers: none of it is used here
#define MSHADOW_USE_CBLAS 0
#define MSHADOW_USE_CUDA 0
#include <mxnet/imperative.h>
#include <mxnet/ndarray.h>

#include "aval.h"
#include "mxapi.h"

namespace minpy {

bool peek_aval(NDArrayHandle h, AVal* out) {
  const auto* arr = static_cast<const mxnet::NDArray*>(h);
  if (arr->is_none() || arr->storage_type() != mxnet::kDefaultStorage) return false;
  const mxnet::TShape& s = arr->shape();
  if (s.ndim() < 1 || s.ndim() > AVal::kMaxDim) return false;
  for (int i = 0; i < s.ndim(); ++i)
    if (s[i] <= 0) return false;
  out->ndim = s.ndim();
  for (int i = 0; i < s.ndim(); ++i) out->dims[i] = s[i];
  out->dtype = arr->dtype();
  const mxnet::Context ctx = arr->ctx();
  out->dev_type = static_cast<int>(ctx.dev_type);
  out->dev_id = ctx.dev_id;
  return true;
}

bool peek_works() {
  static const bool works = [] {
    const uint32_t shapes[][3] = {{2, 3, 1}, {7, 1, 1}, {4, 5, 6}};
    const int ndims[] = {2, 1, 3};
    const int dtypes[] = {0, 2, 4};
    for (int k = 0; k < 3; ++k) {
      NDArrayHandle h = nullptr;
      if (MXNDArrayCreateEx(shapes[k], ndims[k], 1, 0, 1, dtypes[k], &h)) return false;
      AVal peeked, real;
      bool ok = peek_aval(h, &peeked);
      try {
        real = aval_of_c_api(h);
      } catch (...) {
        ok = false;
      }
      MXNDArrayFree(h);
      if (!ok || peeked != real) return false;
    }
    return true;
  }();
  return works;
}

// Storage identity without touching data. An NDArrayHandle is a `mxnet::NDArray*`
// whose first member is the shared_ptr to its storage chunk, which every view
// (reshape, slice, detach) shares and nothing else does. Reading the word needs no
// allocation, so unlike MXNDArrayGetData it cannot race the engine allocating a
// delay-allocated array. Checked once against real views before it is trusted.
const void* chunk_of(NDArrayHandle h) { return *static_cast<void* const*>(h); }

bool chunk_identity_works() {
  static const bool works = [] {
    const uint32_t shape[] = {4};
    NDArrayHandle a = nullptr, b = nullptr, view = nullptr;
    if (MXNDArrayCreateEx(shape, 1, 1, 0, 1, 0, &a) || MXNDArrayCreateEx(shape, 1, 1, 0, 1, 0, &b)) return false;
    bool ok = MXNDArraySlice(a, 1, 3, &view) == 0 && chunk_of(a) && chunk_of(a) == chunk_of(view) &&
              chunk_of(a) != chunk_of(b);
    if (view) MXNDArrayFree(view);
    MXNDArrayFree(a);
    MXNDArrayFree(b);
    return ok;
  }();
  return works;
}

// Whether the array has autograd information (a gradient buffer from attach_grad, or a place in
// a recorded graph): what MXNet's Imperative::RecordOp checks. AGInfo is Imperative's friend,
// so its inline IsNone reads the NDArray's autograd entry; no build option moves that member.
bool in_autograd_graph(NDArrayHandle h) {
  return !mxnet::Imperative::AGInfo::IsNone(*static_cast<const mxnet::NDArray*>(h));
}

bool autograd_peek_works() {
  static const bool works = [] {
    const uint32_t shape[] = {3};
    NDArrayHandle a = nullptr, grad = nullptr, other = nullptr;
    if (MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &a) || MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &grad) ||
        MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &other))
      return false;
    bool ok = !in_autograd_graph(a);
    uint32_t req = 1;  // write
    ok = ok && MXAutogradMarkVariables(1, &a, &req, &grad) == 0 && in_autograd_graph(a) && !in_autograd_graph(other);
    for (NDArrayHandle h : {a, grad, other}) MXNDArrayFree(h);
    return ok;
  }();
  return works;
}

}  // namespace minpy
