// The SSA form of a fused elementwise program (shared by the forward kernel and
// its gradient, fused_grad.cc). Register i is the value of instruction i.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attrs.h"

namespace minpy_kernels {
namespace fused {

enum OpCode : int {
  kLd, kConst,
  // unary
  kNeg, kAbs, kRelu, kReluNan, kSigmoid, kTanh, kExp, kLog, kSqrt, kRsqrt, kSquare, kRecip,
  kSoftrelu, kSoftsign, kSigmoidF32,
  // Activation's sigmoid and tanh as MXNet's wheel runs them (oneDNN's kernels: onednn_eltwise.h)
  kSigmoidDnnl, kTanhDnnl,
  // binary
  kAdd, kSub, kMul, kDiv, kMax, kMin,
  kClip,
  // used by gradients: sign(a) (NaN -> 0), step(a) = a > 0 ? 1 : 0, step_nan (NaN stays NaN),
  // clip_grad(g, x) = x > hi || x < lo ? 0 : g, tanh_dnnl_grad(x, g) and sigmoid_dnnl_grad(x, g)
  // (oneDNN's Activation backward, from the activation's input: onednn_eltwise.h)
  kSign, kStep, kStepNan, kClipGrad, kTanhDnnlGrad, kSigmoidDnnlGrad,
};

struct OpName { const char* name; OpCode code; int arity; };
inline const OpName kOps[] = {
  {"neg", kNeg, 1}, {"abs", kAbs, 1}, {"relu", kRelu, 1}, {"relu_nan", kReluNan, 1},
  {"sigmoid", kSigmoid, 1}, {"tanh", kTanh, 1}, {"exp", kExp, 1}, {"log", kLog, 1},
  {"sqrt", kSqrt, 1}, {"rsqrt", kRsqrt, 1}, {"square", kSquare, 1}, {"recip", kRecip, 1},
  {"softrelu", kSoftrelu, 1}, {"softsign", kSoftsign, 1}, {"sigmoid_f32", kSigmoidF32, 1},
  {"sigmoid_dnnl", kSigmoidDnnl, 1}, {"tanh_dnnl", kTanhDnnl, 1},
  {"add", kAdd, 2}, {"sub", kSub, 2}, {"mul", kMul, 2}, {"div", kDiv, 2},
  {"max", kMax, 2}, {"min", kMin, 2},
  {"sign", kSign, 1}, {"step", kStep, 1}, {"step_nan", kStepNan, 1},
  {"tanh_dnnl_grad", kTanhDnnlGrad, 2}, {"sigmoid_dnnl_grad", kSigmoidDnnlGrad, 2},
};

struct Access {
  int64_t offset, row_stride, col_stride;
  bool broadcast() const { return row_stride == 0 && col_stride == 0; }
};

// One executable instruction; a, b, dst are register BUFFER ids (after allocation).
struct Instr {
  OpCode op;
  int dst = -1, a = -1, b = -1;
  int input = -1;         // kLd: which input
  float f0 = 0, f1 = 0;   // kConst value / kClip bounds
};

// One instruction of the SSA program with its operand registers.
struct Raw {
  Instr ins;
  std::vector<int> uses;
};

struct Ssa {
  int num_inputs = 0, num_outputs = 0;
  // The last num_saved outputs are intermediate values kept for the backward (the runtime's
  // recorded graphs whose backward MXNet runs later, cpp/src/fuse.cc): the gradient
  // program reads them and takes no output gradient for them.
  int num_saved = 0;
  std::vector<int64_t> out_shape;
  int64_t rows = 1, cols = 1;    // iteration space R x C
  std::vector<Access> access;    // per input
  std::vector<Raw> code;
  std::vector<int> outputs;      // register of each output
};

// The program of a _minpy_fused_elemwise node's attributes (throws on malformed text).
Ssa parse_ssa(const AttrMap& attrs);

// The gradient program: inputs [output grads (num_outputs), the forward's inputs,
// the forward's outputs], one output per forward input (its gradient). Each op's
// derivative is the float computation of MXNet 1.9.1's backward kernel for the op the
// instruction stands for; contributions to one register are summed in the order
// outputs' gradients first, then consumers from the last instruction back. A value the
// derivatives read is the output naming it where there is one, else recomputed from the
// inputs (only what the derivatives need).
// Throws if an instruction has no gradient or an input is not read contiguously.
Ssa gradient_ssa(const Ssa& fwd);

}  // namespace fused
}  // namespace minpy_kernels
