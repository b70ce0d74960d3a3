// Activation's sigmoid and tanh inside fused units: when our reproduction of MXNet's kernel
// may stand in for it.
//
// MXNet's wheel runs Activation(act_type='sigmoid' | 'tanh') on float32 CPU data through
// oneDNN's JIT eltwise kernels, forward and backward, whose approximations differ from libm's
// (and from the mshadow `sigmoid` / `tanh` operators') in the last bits of a quarter to a half
// of all inputs. The fused kernels' sigmoid_dnnl and tanh_dnnl instructions compute oneDNN's
// algorithms operation for operation (cpp/kernels/onednn_eltwise.h). oneDNN picks its kernel by
// the CPU it runs on, and a user may turn oneDNN off (MXNET_MKLDNN_ENABLED=0), so nothing is
// assumed: before the first graph uses an instruction, MXNet's operator and a one-instruction
// fused unit run forward and backward on the same draw (every pair of special values, random
// bit patterns of every exponent, and the range where the functions bend), and the
// instruction is used only if every output and every gradient has the same bits.
#pragma once
#include <string>

#include "aval.h"

namespace minpy {

// The fused instruction standing for Activation(act_type=`act`) on `in`, or null when MXNet's
// operator must stay: relu and softsign (MXNet's own arithmetic), sigmoid and tanh where MXNet
// runs oneDNN on `in` and the check passed under the training flag `training`.
const char* activation_instr(const std::string& act, const AVal& in, bool training);

}  // namespace minpy
