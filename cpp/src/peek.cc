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
#include <cstddef>
#include <cstring>
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

// NDArray's first member is its std::shared_ptr<Chunk>; copying it as a shared_ptr of another
// pointee type copies the same two words and takes a reference on the same control block.
std::shared_ptr<const void> chunk_ref(NDArrayHandle h) { return *static_cast<const std::shared_ptr<const void>*>(h); }

// A chunk begins with its Storage::Handle, whose first members are the data pointer and the
// size allocated (storage.h); byte_offset() is the view's start within it.
void* data_of(NDArrayHandle h, size_t bytes) {
  const auto* arr = static_cast<const mxnet::NDArray*>(h);
  if (arr->is_none() || arr->storage_type() != mxnet::kDefaultStorage) return nullptr;
  const auto* storage = static_cast<const mxnet::Storage::Handle*>(chunk_of(h));
  if (!storage || !storage->dptr || storage->size < arr->byte_offset() + bytes) return nullptr;
  return static_cast<char*>(storage->dptr) + arr->byte_offset();
}

bool data_peek_works() {
  static const bool works = [] {
    const uint32_t shape[] = {6};
    NDArrayHandle a = nullptr, view = nullptr;
    if (MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &a)) return false;  // allocated now
    void* real = nullptr;
    void* real_view = nullptr;
    bool ok = MXNDArrayGetData(a, &real) == 0 && real && data_of(a, 24) == real && !data_of(a, 25) &&
              MXNDArraySlice(a, 2, 5, &view) == 0 && MXNDArrayGetData(view, &real_view) == 0 &&
              data_of(view, 12) == real_view && real_view == static_cast<char*>(real) + 8 && !data_of(view, 17);
    if (view) MXNDArrayFree(view);
    MXNDArrayFree(a);
    return ok;
  }();
  return works;
}

bool same_array(NDArrayHandle a, NDArrayHandle b) {
  const auto* x = static_cast<const mxnet::NDArray*>(a);
  const auto* y = static_cast<const mxnet::NDArray*>(b);
  return x->storage_type() == mxnet::kDefaultStorage && y->storage_type() == mxnet::kDefaultStorage && x->IsSame(*y);
}

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

namespace {

// NDArray::reuse_ (IsView: an array made by AsArray is not a view) is private; named through an
// explicit instantiation, as entry_ below.
struct ReuseMember {
  using type = bool mxnet::NDArray::*;
  friend type reuse_member(ReuseMember);
};
template <typename Tag, typename Tag::type M>
struct ExposeReuse {
  friend typename Tag::type reuse_member(Tag) { return M; }
};
template struct ExposeReuse<ReuseMember, &mxnet::NDArray::reuse_>;

// NDArray::Chunk::storage_shape as libmxnet.so lays the chunk out. This file is compiled without
// MKLDNN, and the wheel's Chunk has a std::shared_ptr (mkl_mem_) before that member, so this
// compiler's offset is not the library's. This compiler's is where storage_shape() of a sparse
// array points (an address, nothing read); the library's is the first of that offset and the
// next words (all inside the library's larger chunk) that holds the shapes of arrays made through
// the C API. -1: not found.
long probe_storage_shape_offset() {
  const uint32_t sparse_shape[] = {4, 2};
  int aux_type = 6;  // int64 row indices
  uint32_t aux_ndim = 1, aux_shape[] = {0};
  NDArrayHandle sparse = nullptr;
  if (MXNDArrayCreateSparseEx(1 /* row_sparse */, sparse_shape, 2, 1, 0, 1, 0, 1, &aux_type, &aux_ndim, aux_shape,
                              &sparse) != 0)
    return -1;
  const auto* sp = static_cast<const mxnet::NDArray*>(sparse);
  const long own = reinterpret_cast<const char*>(&sp->storage_shape()) - static_cast<const char*>(chunk_of(sparse));
  MXNDArrayFree(sparse);
  const uint32_t shapes[][3] = {{3, 5, 1}, {7, 1, 1}, {2, 9, 4}};
  const uint32_t ndims[] = {2, 1, 3};
  NDArrayHandle arrays[3] = {nullptr, nullptr, nullptr};
  long found = -1;
  bool made = true;
  for (int k = 0; k < 3; ++k) made = made && MXNDArrayCreateEx(shapes[k], ndims[k], 1, 0, 1, 0, &arrays[k]) == 0;
  for (long off = own; made && found < 0 && off <= own + 32; off += 8) {
    bool all = true;
    for (int k = 0; k < 3 && all; ++k) {
      const char* at = static_cast<const char*>(chunk_of(arrays[k])) + off;
      int ndim = 0;
      std::memcpy(&ndim, at, sizeof ndim);  // Tuple::ndim_ first: checked before the Tuple is read
      all = ndim == static_cast<int>(ndims[k]);
      for (uint32_t d = 0; all && d < ndims[k]; ++d)
        all = (*reinterpret_cast<const mxnet::TShape*>(at))[d] == static_cast<int64_t>(shapes[k][d]);
    }
    if (all) found = off;
  }
  for (NDArrayHandle h : arrays)
    if (h) MXNDArrayFree(h);
  return found;
}

long storage_shape_offset() {
  static const long offset = probe_storage_shape_offset();
  return offset;
}

}  // namespace

// NDArray::IsView with libmxnet.so's chunk layout: a slice, a row, or a reshape of an array.
bool is_view(NDArrayHandle h) {
  const auto* arr = static_cast<const mxnet::NDArray*>(h);
  if (arr->is_none() || arr->storage_type() != mxnet::kDefaultStorage || arr->*reuse_member(ReuseMember()))
    return false;
  if (arr->byte_offset() > 0) return true;
  const char* chunk = static_cast<const char*>(chunk_of(h));
  return arr->shape() != *reinterpret_cast<const mxnet::TShape*>(chunk + storage_shape_offset());
}

bool view_peek_works() {
  static const bool works = [] {
    if (storage_shape_offset() < 0) return false;
    const uint32_t shape[] = {4, 3};
    NDArrayHandle a = nullptr, row = nullptr, rows = nullptr, all_rows = nullptr, reshaped = nullptr;
    const int64_t flat[] = {12};
    bool ok = MXNDArrayCreateEx(shape, 2, 1, 0, 1, 0, &a) == 0 && !is_view(a) && MXNDArrayAt(a, 1, &row) == 0 &&
              is_view(row) && MXNDArraySlice(a, 0, 2, &rows) == 0 && is_view(rows) &&
              MXNDArraySlice(a, 0, 4, &all_rows) == 0 && !is_view(all_rows) &&
              MXNDArrayReshape64(a, 1, const_cast<int64_t*>(flat), false, &reshaped) == 0 && is_view(reshaped);
    for (NDArrayHandle h : {a, row, rows, all_rows, reshaped})
      if (h) MXNDArrayFree(h);
    return ok;
  }();
  return works;
}

namespace {

// NDArray::entry_ (its autograd node) is private; naming a pointer to it in an explicit
// instantiation is allowed, and the friend function hands the pointer out.
struct EntryMember {
  using type = nnvm::NodeEntry mxnet::NDArray::*;
  friend type entry_member(EntryMember);
};
template <typename Tag, typename Tag::type M>
struct Expose {
  friend typename Tag::type entry_member(Tag) { return M; }
};
template struct Expose<EntryMember, &mxnet::NDArray::entry_>;

const nnvm::Node* autograd_node(NDArrayHandle h) {
  return (static_cast<const mxnet::NDArray*>(h)->*entry_member(EntryMember())).node.get();
}

// nnvm::Node::info (autograd's AGInfo) as libmxnet.so lays the node out. Its NodeAttrs holds a
// std::unordered_map, and the wheel's libstdc++ predates GCC 4.9: its unordered_map has no
// single-bucket member and is 8 bytes smaller than this compiler's, so `info` is not where
// this compiler's nnvm::Node puts it (reading it there, AGInfo::IsNone saw the heap pointer
// of the `any`, not its type). The offset is found once by probing a variable marked through
// the C API: the AGInfo must hold its context, request and gradient buffer. -1: not found.
long probe_info_offset();

long info_offset() {
  static const long offset = probe_info_offset();
  return offset;
}

const dmlc::any& info_of(const nnvm::Node* node, long offset) {
  return *reinterpret_cast<const dmlc::any*>(reinterpret_cast<const char*>(node) + offset);
}

const mxnet::Imperative::AGInfo* aginfo_of(const nnvm::Node* node, long offset) {
  const dmlc::any& info = info_of(node, offset);
  if (info.empty() || info.type() != typeid(mxnet::Imperative::AGInfo)) return nullptr;
  return &dmlc::get<mxnet::Imperative::AGInfo>(info);
}

// Whether the candidate offset reads variable `a`, marked with `req` and gradient `grad`, right.
bool reads_variable(NDArrayHandle a, NDArrayHandle grad, uint32_t req, long offset) {
  const nnvm::Node* node = autograd_node(a);
  if (!node || !node->is_variable()) return false;
  // the type pointer must be a readable `any` before its type_info is compared
  const auto* words = reinterpret_cast<const uintptr_t*>(reinterpret_cast<const char*>(node) + offset);
  if (words[0] == 0 || words[0] % alignof(void*) != 0) return false;
  const auto* info = aginfo_of(node, offset);
  return info && info->grad_req == static_cast<mxnet::OpReqType>(req) && info->ctx.dev_type == mxnet::Context::kCPU &&
         info->outputs.size() == 1 && info->out_grads.size() == 1 && chunk_identity_works() &&
         chunk_of(const_cast<mxnet::NDArray*>(&info->out_grads[0])) == chunk_of(grad);
}

long probe_info_offset() {
  const uint32_t shape[] = {3};
  NDArrayHandle a = nullptr, b = nullptr, ga = nullptr, gb = nullptr;
  long found = -1;
  if (MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &a) || MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &b) ||
      MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &ga) || MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &gb))
    return -1;
  uint32_t write = 1, add = 3;
  if (MXAutogradMarkVariables(1, &a, &write, &ga) == 0 && MXAutogradMarkVariables(1, &b, &add, &gb) == 0) {
    // candidates around this compiler's own offset (the members before `info` differ by whole words)
    const long own = static_cast<long>(offsetof(nnvm::Node, info));
    for (long off = own - 32; off <= own + 32 && found < 0; off += 8)
      if (off > 0 && reads_variable(a, ga, write, off) && reads_variable(b, gb, add, off)) found = off;
  }
  for (NDArrayHandle h : {a, b, ga, gb})
    if (h) MXNDArrayFree(h);
  return found;
}

}  // namespace

// Whether the array has autograd information (a gradient buffer from attach_grad, or a place in
// a recorded graph): what MXNet's Imperative::RecordOp checks (AGInfo::IsNone, with libmxnet's
// layout of the node).
bool in_autograd_graph(NDArrayHandle h) {
  const nnvm::Node* node = autograd_node(h);
  return node && info_offset() >= 0 && !info_of(node, info_offset()).empty();
}

// What autograd knows of an array (Imperative::Backward's view): nothing (a constant), a
// variable with a gradient buffer (attach_grad: a leaf the backward writes into) and its
// request, or recorded history (the output of a recorded op).
AutogradRole autograd_role(NDArrayHandle h, int* grad_req) {
  const nnvm::Node* node = autograd_node(h);
  const long offset = info_offset();
  if (!node || offset < 0 || info_of(node, offset).empty()) return AutogradRole::kNone;
  if (!node->is_variable()) return AutogradRole::kHistory;
  const auto* info = aginfo_of(node, offset);
  if (!info) return AutogradRole::kHistory;  // not autograd's: be safe
  *grad_req = static_cast<int>(info->grad_req);
  if (info->grad_req == mxnet::kNullOp) return AutogradRole::kNone;
  return info->outputs.size() == 1 && info->out_grads.size() == 1 ? AutogradRole::kVariable : AutogradRole::kHistory;
}

NDArrayHandle grad_buffer_of(NDArrayHandle h) {
  const nnvm::Node* node = autograd_node(h);
  const long offset = info_offset();
  if (!node || offset < 0 || !node->is_variable() || info_of(node, offset).empty()) return nullptr;
  const auto* info = aginfo_of(node, offset);
  if (!info || info->outputs.size() != 1 || info->out_grads.size() != 1) return nullptr;
  return const_cast<mxnet::NDArray*>(&info->out_grads[0]);
}

bool autograd_peek_works() {
  static const bool works = [] {
    if (info_offset() < 0) return false;
    const uint32_t shape[] = {3};
    NDArrayHandle a = nullptr, grad = nullptr, other = nullptr;
    if (MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &a) || MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &grad) ||
        MXNDArrayCreateEx(shape, 1, 1, 0, 0, 0, &other))
      return false;
    bool ok = !in_autograd_graph(a);
    uint32_t req = 1;  // write
    ok = ok && MXAutogradMarkVariables(1, &a, &req, &grad) == 0 && in_autograd_graph(a) && !in_autograd_graph(other);
    int got = -1;
    ok = ok && autograd_role(a, &got) == AutogradRole::kVariable && got == 1 &&
         autograd_role(other, &got) == AutogradRole::kNone;
    ok = ok && grad_buffer_of(a) && chunk_of(grad_buffer_of(a)) == chunk_of(grad) && !grad_buffer_of(other);
    for (NDArrayHandle h : {a, grad, other}) MXNDArrayFree(h);
    return ok;
  }();
  return works;
}

}  // namespace minpy
