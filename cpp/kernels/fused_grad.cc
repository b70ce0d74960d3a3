// Reverse mode over a fused elementwise program: the backward of a fused unit is
// itself a fused program, run by the same interpreter.
//
// Nothing but the unit's inputs and outputs is saved: MXNet keeps both alive for
// the backward node anyway. An output's value is read back; other values the
// derivatives need are recomputed from the inputs (the same instructions on the
// same inputs give the same bits), unless the runtime made them outputs too
// ("saved" outputs, which take no gradient: where MXNet's autograd runs the
// backward later, cpp/src/fuse.cc saves every value a derivative reads).
//
// Exactness: each derivative is written as the float operations of MXNet
// 1.9.1's backward kernel for the op the instruction stands for (checked
// against eager gradients, specials included, in tests/test_fused_grad.py), so
// a gradient built only from arithmetic is bit-identical to eager's; through a
// transcendental it differs only as far as our forward value does. A register
// read by several instructions gets the sum of their contributions; with two
// the order cannot change the bits, and the runtime only fuses recorded chains
// in which no value has more than two (cpp/src/fuse.cc).
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fused_ssa.h"

namespace minpy_kernels {
namespace fused {
namespace {

class GradBuilder {
 public:
  explicit GradBuilder(const Ssa& f) : f_(f) {
    m_ = f.num_outputs;
    n_ = f.num_inputs;
    g_.num_inputs = 2 * m_ + n_;
    g_.num_outputs = n_;
    g_.out_shape = f.out_shape;
    g_.rows = f.rows;
    g_.cols = f.cols;
    const Access contiguous{0, f.cols, 1};
    for (int k = 0; k < m_; ++k) g_.access.push_back(contiguous);  // output gradients
    for (int j = 0; j < n_; ++j) {
      const Access& a = f.access[j];
      const bool single = f.rows * f.cols == 1 && a.offset == 0;  // one element: any strides
      if (!single && !(a.offset == 0 && a.row_stride == f.cols && a.col_stride == 1))
        throw std::runtime_error("input " + std::to_string(j) +
                                 " is not read contiguously over the whole output (access " +
                                 std::to_string(a.offset) + "," + std::to_string(a.row_stride) + "," +
                                 std::to_string(a.col_stride) + "): its gradient is not supported");
      g_.access.push_back(a);
    }
    for (int k = 0; k < m_; ++k) g_.access.push_back(contiguous);  // forward outputs
  }

  Ssa build() {
    const int nreg = static_cast<int>(f_.code.size());
    // Forward values the derivatives read: an output's value is loaded (the first output
    // naming it), others recomputed, each only if needed (val() emits on first use).
    val_.assign(nreg, -1);
    for (int k = 0; k < m_; ++k)
      if (val_[f_.outputs[k]] < 0) val_[f_.outputs[k]] = load(m_ + n_ + k);
    // Adjoints: outputs' gradients first (not saved outputs': values kept for this program),
    // then contributions from the last instruction back.
    std::vector<std::vector<int>> adj(nreg), in_adj(n_);
    for (int k = 0; k < m_ - f_.num_saved; ++k) adj[f_.outputs[k]].push_back(load(k));
    for (int i = nreg - 1; i >= 0; --i) {
      if (adj[i].empty()) continue;
      const Raw& r = f_.code[i];
      const int g = sum(adj[i]);
      if (r.ins.op == kLd) {
        in_adj[r.ins.input].push_back(g);
        continue;
      }
      if (r.ins.op == kConst) continue;
      const int a = r.uses.empty() ? -1 : r.uses[0], b = r.uses.size() < 2 ? -1 : r.uses[1];
      auto to = [&](int reg, int contribution) {
        if (f_.code[reg].ins.op != kConst) adj[reg].push_back(contribution);
      };
      const bool need_a = a >= 0 && f_.code[a].ins.op != kConst;
      const bool need_b = b >= 0 && f_.code[b].ins.op != kConst;
      auto x_of = [&] { return val(a); };  // the operand's value and the result's, emitted when read
      auto y_of = [&] { return val(i); };
      switch (r.ins.op) {
        // MXNet: _backward_* = ograd * derivative, the derivative computed as written here.
        case kNeg: to(a, op1(kNeg, g)); break;                                   // negative(ograd)
        case kAbs: to(a, op2(kMul, g, op1(kSign, x_of()))); break;  // sign(x), NaN -> 0
        case kRelu: to(a, op2(kMul, g, op1(kStep, y_of()))); break;  // Activation relu, of its output
        case kReluNan: to(a, op2(kMul, g, op1(kStepNan, y_of()))); break;  // relu (of its output): NaN stays NaN
        case kSigmoid:
        case kSigmoidF32: to(a, op2(kMul, g, op2(kMul, y_of(), op2(kSub, cst(1.0f), y_of())))); break;  // y*(1-y)
        case kTanh: to(a, op2(kMul, g, op2(kSub, cst(1.0f), op2(kMul, y_of(), y_of())))); break;  // 1-y*y
        // Activation's, through oneDNN: the derivative from the input, times g (onednn_eltwise.h)
        case kTanhDnnl: to(a, op2(kTanhDnnlGrad, x_of(), g)); break;
        case kSigmoidDnnl: to(a, op2(kSigmoidDnnlGrad, x_of(), g)); break;
        case kExp: to(a, op2(kMul, g, y_of())); break;  // _mul(ograd, y)
        case kLog: to(a, op2(kMul, g, op1(kRecip, x_of()))); break;  // 1/x
        case kSqrt: to(a, op2(kMul, g, op2(kDiv, cst(0.5f), y_of()))); break;  // 0.5/y
        case kRsqrt:  // -0.5/(x*sqrt(x))
          to(a, op2(kMul, g, op2(kDiv, cst(-0.5f), op2(kMul, x_of(), op1(kSqrt, x_of())))));
          break;
        case kSquare: to(a, op2(kMul, g, op2(kMul, cst(2.0f), x_of()))); break;  // 2*x
        case kRecip: to(a, op2(kMul, g, op2(kDiv, cst(-1.0f), op2(kMul, x_of(), x_of())))); break;  // -1/(x*x)
        case kSoftrelu: to(a, op2(kMul, g, op1(kSigmoid, x_of()))); break;  // d/dx log1p(e^x)
        case kSoftsign: {  // 1/((1+|x|)^2)
          int s = op2(kAdd, cst(1.0f), op1(kAbs, x_of()));
          to(a, op2(kMul, g, op2(kDiv, cst(1.0f), op2(kMul, s, s))));
          break;
        }
        case kAdd:
          if (need_a) to(a, g);
          if (need_b) to(b, g);
          break;
        case kSub:
          if (need_a) to(a, g);
          if (need_b) to(b, op1(kNeg, g));
          break;
        case kMul:
          if (need_a) to(a, op2(kMul, g, val(b)));
          if (need_b) to(b, op2(kMul, g, x_of()));
          break;
        case kDiv:
          if (!need_b) {  // _div_scalar: ograd / s
            if (need_a) to(a, op2(kDiv, g, val(b)));
            break;
          }
          if (!need_a) {  // _rdiv_scalar: ograd * (-s / (x*x))
            to(b, op2(kMul, g, op2(kDiv, cst(-f_.code[a].ins.f0), op2(kMul, val(b), val(b)))));
            break;
          }
          // elemwise_div: ograd * (1/b), ograd * (-a/(b*b))
          to(a, op2(kMul, g, op1(kRecip, val(b))));
          to(b, op2(kMul, g, op2(kDiv, op1(kNeg, x_of()), op2(kMul, val(b), val(b)))));
          break;
        case kClip: {
          Raw c;
          c.ins.op = kClipGrad;
          c.ins.f0 = r.ins.f0;
          c.ins.f1 = r.ins.f1;
          c.uses = {g, x_of()};
          to(a, emit(c));
          break;
        }
        default:
          throw std::runtime_error("instruction " + std::to_string(i) + " has no gradient");
      }
    }
    for (int j = 0; j < n_; ++j) g_.outputs.push_back(in_adj[j].empty() ? cst(0.0f) : sum(in_adj[j]));
    return std::move(g_);
  }

 private:
  const Ssa& f_;
  Ssa g_;
  int m_ = 0, n_ = 0;
  std::vector<int> val_;

  // Register (in the gradient program) holding forward register i's value.
  int val(int i) {
    if (val_[i] >= 0) return val_[i];
    const Raw& r = f_.code[i];
    Raw c = r;
    if (r.ins.op == kLd) c.ins.input = m_ + r.ins.input;
    for (int& u : c.uses) u = val(u);
    return val_[i] = emit(c);
  }
  int emit(const Raw& r) {
    g_.code.push_back(r);
    return static_cast<int>(g_.code.size()) - 1;
  }
  int load(int input) {
    Raw r;
    r.ins.op = kLd;
    r.ins.input = input;
    return emit(r);
  }
  int cst(float v) {
    Raw r;
    r.ins.op = kConst;
    r.ins.f0 = v;
    return emit(r);
  }
  int op1(OpCode op, int a) {
    Raw r;
    r.ins.op = op;
    r.uses = {a};
    return emit(r);
  }
  int op2(OpCode op, int a, int b) {
    Raw r;
    r.ins.op = op;
    r.uses = {a, b};
    return emit(r);
  }
  // c0 + c1 + ... left to right, as MXNet's ElementWiseSum adds its inputs.
  int sum(const std::vector<int>& cs) {
    int s = cs[0];
    for (size_t k = 1; k < cs.size(); ++k) s = op2(kAdd, s, cs[k]);
    return s;
  }
};

}  // namespace

Ssa gradient_ssa(const Ssa& fwd) { return GradBuilder(fwd).build(); }

}  // namespace fused
}  // namespace minpy_kernels
