// Entry point of the minpy_jit._kernels operator library (loaded with
// MXLoadLib / mxnet.library.load). The operators register themselves in
// fused_elemwise.cc and multi_update.cc through REGISTER_OP; this file only
// answers MXNet's version handshake.
#include "mxnet/lib_api.h"

using namespace mxnet::ext;

// Built against MXNet 1.9.x's lib_api.h (MX_LIBRARY_VERSION 11).
MXReturnValue initialize(int version) {
  if (version >= 10900) return MX_SUCCESS;
  MX_ERROR_MSG << "minpy_jit kernels need MXNet >= 1.9.0, got version " << version;
  return MX_FAIL;
}
