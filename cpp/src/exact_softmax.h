// log_softmax in our kernels: when _minpy_log_softmax may stand in for MXNet's operator.
//
// MXNet's wheel runs log_softmax over the last axis of float32 data (1 to 4 dimensions, no
// temperature, no dtype) through oneDNN's softmax kernel, whose set-up costs several times its
// arithmetic on a classifier's logits (W3's 64 x 10: 7 us forward, 19 backward, profiled).
// cpp/kernels/onednn_softmax.h reproduces that kernel's float operations in order, for the
// vector width oneDNN picks on this CPU (16 with AVX-512, 8 with AVX2). Nothing is assumed:
// before a graph uses the op for a row length, MXNet's operator and ours run forward and
// backward (autograd) on the same draw (rows of every kind: wide magnitudes, infinities, NaNs,
// equal values, one-hot, random bit patterns; wide head gradients), and the op is used only if
// every output and gradient has the same bits. Used, as _minpy_fc, in graphs MXNet's autograd
// does not record (its backward writes, never adds, the gradient).
#pragma once
#include <string>
#include <vector>

#include "trace.h"

namespace minpy {

// The attributes of _minpy_log_softmax if node `n` of `t` (a log_softmax) runs as our op:
// float32 CPU data of 1-4 dimensions, the last axis, no temperature or dtype, and the check
// passed for its row length under the trace's training flag; else none.
std::vector<Attr> log_softmax_kernel_attrs(const Trace& t, const Node& n);

// Whether _minpy_log_softmax gives MXNet's bits, forward and backward, on rows of `cols`
// under the training flag (checked once per process, row length and flag).
bool log_softmax_kernel_exact(int64_t cols, bool training);

}  // namespace minpy
