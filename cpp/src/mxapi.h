// Thin, Python-free helpers over MXNet's C API: error checking and the
// handful of array queries the runtime needs.
#pragma once
#include <mxnet/c_api.h>
#include <nnvm/c_api.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "aval.h"

namespace minpy {

// Raised when an MXNet C API call fails, or by our own checks. what() is for our logs (it names
// the C API call); mxnet_text, when MXNet raised the error, is MXGetLastError's text, which the
// user gets as the exception eager code gets for it (errors.py mxnet_error: its type and
// wording, no C API call), with `note` (where in our runtime) as the exception's note.
struct MXError : std::runtime_error {
  using std::runtime_error::runtime_error;
  MXError(const std::string& what, std::string text, std::string note = "")
      : std::runtime_error(what), mxnet_text(std::move(text)), note(std::move(note)) {}
  std::string mxnet_text, note;
};

// MXNet's last error, raised from our code: `note` says what we were doing.
inline MXError mxnet_failure(const std::string& note = "") {
  std::string text = MXGetLastError();
  return MXError(note.empty() ? text : note + ": " + text, text, note);
}

inline void mx_check(int rc, const char* what) {
  if (rc != 0) {
    std::string text = MXGetLastError();
    throw MXError(text + " [" + what + "]", text);
  }
}
#define MX_CALL(expr) ::minpy::mx_check((expr), #expr)

// Arrays our runtime makes for itself (trial runs, checks), freed when it goes.
struct OwnedArrays {
  std::vector<NDArrayHandle> handles;
  OwnedArrays() = default;
  OwnedArrays(const OwnedArrays&) = delete;
  OwnedArrays& operator=(const OwnedArrays&) = delete;
  ~OwnedArrays() {
    for (NDArrayHandle h : handles) MXNDArrayFree(h);
  }
};

// Autograd recording off while it lives: ops our runtime runs for itself (trial runs, checks)
// are no part of the user's autograd graph.
class RecordingPaused {
 public:
  RecordingPaused() { MXAutogradSetIsRecording(0, &was_); }
  ~RecordingPaused() {
    int ignored = 0;
    MXAutogradSetIsRecording(was_, &ignored);
  }
  RecordingPaused(const RecordingPaused&) = delete;
  RecordingPaused& operator=(const RecordingPaused&) = delete;

 private:
  int was_ = 0;
};

inline bool np_shape_mode() {
  int cur = 0;
  MXIsNumpyShape(&cur);
  return cur != 0;
}

// peek.cc: reading the mxnet::NDArray object behind a handle without the C API, each
// reading checked once against the C API on real arrays before it is trusted.
//   peek_aval: shape/dtype/context of a dense array of known shape (false: ask the C API);
//   chunk_of: the storage chunk every view of the array shares (for alias checks).
bool peek_aval(NDArrayHandle h, AVal* out);
bool peek_works();
const void* chunk_of(NDArrayHandle h);
std::shared_ptr<const void> chunk_ref(NDArrayHandle h);  // a reference that keeps the chunk alive
bool chunk_identity_works();
//   data_of: the address of a dense, allocated array's first element (its chunk's storage
//   plus its offset), null if the chunk holds fewer than `bytes` from there or is not
//   allocated yet; the address stays valid while the chunk lives (see update_launch.h).
void* data_of(NDArrayHandle h, size_t bytes);
bool data_peek_works();
//   same_array: two handles of one array (NDArray::IsSame: chunk, offset, shape, dtype).
bool same_array(NDArrayHandle a, NDArrayHandle b);
//   is_view: NDArray::IsView (a slice, row or reshape of an array: its storage has another shape or
//   it starts inside it), read with libmxnet.so's chunk layout; trusted only when view_peek_works().
bool is_view(NDArrayHandle h);
bool view_peek_works();
//   in_autograd_graph: whether autograd knows the array (MXNet refuses to overwrite it while
//   recording, and an op reading it under record() joins the graph); see record.cc.
bool in_autograd_graph(NDArrayHandle h);
bool autograd_peek_works();
//   autograd_role: a constant, a variable with a gradient buffer (grad_req: MXNet's OpReqType),
//   or an array with recorded history; trusted only when autograd_peek_works().
enum class AutogradRole { kNone, kVariable, kHistory };
AutogradRole autograd_role(NDArrayHandle h, int* grad_req);
//   grad_buffer_of: a variable's gradient buffer, the NDArray autograd itself keeps (its AGInfo's
//   out_grads[0]; valid while the variable stays marked), or null; trusted only when
//   autograd_peek_works(). No C API call: a replay reads it on every call.
NDArrayHandle grad_buffer_of(NDArrayHandle h);
// autograd_role where the roles can be read, else kHistory (the cautious answer).
inline AutogradRole autograd_role_or_history(NDArrayHandle h, int* grad_req) {
  return autograd_peek_works() ? autograd_role(h, grad_req) : AutogradRole::kHistory;
}

// executor.cc: MXNet's NDArray::Chunk::Reorder2Default (a oneDNN-layout chunk back to the
// default layout, in place; a no-op otherwise), null in a build without oneDNN.
using ChunkReorder = void (*)(void* chunk);
ChunkReorder chunk_reorder();

// Shape, dtype and context of an existing array through the C API (one call each).
inline AVal aval_of_c_api(NDArrayHandle h) {
  AVal a;
  int ndim = 0;
  const int* dims = nullptr;
  MX_CALL(MXNDArrayGetShapeEx(h, &ndim, &dims));
  a.ndim = ndim;
  if (ndim > AVal::kMaxDim) throw MXError("arrays with more than 8 dimensions are not recorded");
  for (int i = 0; i < ndim && i < AVal::kMaxDim; ++i) a.dims[i] = dims[i];
  MX_CALL(MXNDArrayGetDType(h, &a.dtype));
  MX_CALL(MXNDArrayGetContext(h, &a.dev_type, &a.dev_id));
  return a;
}

// The same, read from the object when it can be (a new input costs ~1.5 us less).
inline AVal aval_of(NDArrayHandle h) {
  AVal a;
  if (peek_works() && peek_aval(h, &a)) return a;
  return aval_of_c_api(h);
}

// Storage type (0 dense); a dense array the peek can read needs no C call.
inline int stype_of(NDArrayHandle h) {
  AVal a;
  if (peek_works() && peek_aval(h, &a)) return 0;
  int st = 0;
  MX_CALL(MXNDArrayGetStorageType(h, &st));
  return st;
}

// Whether the array has a gradient buffer (attach_grad) of sparse storage.
inline bool has_sparse_grad(NDArrayHandle h) {
  NDArrayHandle grad = nullptr;
  if (MXNDArrayGetGrad(h, &grad) != 0 || !grad) return false;
  int st = 0;
  MXNDArrayGetStorageType(grad, &st);
  MXNDArrayFree(grad);
  return st != 0;
}

// A new array of the given abstract value whose memory is allocated on first write.
inline NDArrayHandle new_lazy_array(const AVal& a) {
  NDArrayHandle h = nullptr;
  uint32_t dims[AVal::kMaxDim];
  for (int i = 0; i < a.ndim; ++i) dims[i] = static_cast<uint32_t>(a.dims[i]);
  if (a.ndim <= 0 && !np_shape_mode()) {
    MX_CALL(MXNDArrayCreateNone(&h));
    return h;
  }
  MX_CALL(MXNDArrayCreateEx(dims, a.ndim < 0 ? 0 : a.ndim, a.dev_type, a.dev_id, 1, a.dtype, &h));
  return h;
}

// A new array (new_lazy_array) filled with `nbytes` of data. MXNDArraySyncCopyFromCPU would
// first wait for the array through the engine, whose workers may be busy with an earlier
// graph for milliseconds (a learning rate made per step stalled recording behind the last
// step's update kernel); a CPU array nobody else has seen yet can be written directly.
inline void fill_new_array(NDArrayHandle h, int dev_type, const void* data, size_t nbytes, size_t count) {
  void* dst = nullptr;
  if (dev_type == 1 && MXNDArrayGetData(h, &dst) == 0 && dst) {
    std::memcpy(dst, data, nbytes);
    return;
  }
  MX_CALL(MXNDArraySyncCopyFromCPU(h, data, count));
}

inline std::string op_name_of(AtomicSymbolCreator creator) {
  const char* name = nullptr;
  MX_CALL(MXSymbolGetAtomicSymbolName(creator, &name));
  return name;
}

}  // namespace minpy
