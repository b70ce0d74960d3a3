// FullyConnected on both cores: which calls a graph may run as our _minpy_fc.
//
// MXNet's CPU FullyConnected (oneDNN) runs on one engine worker thread. _minpy_fc
// (cpp/kernels/fc_op.cc, exact_gemm.h) computes the same three products on every core,
// summing each output element in oneDNN's order: fused multiply-adds from zero over blocks
// of the reduction, the blocks' sums added in order, the bias last. oneDNN picks the block
// length by shape (W3's 784-wide forward: 384; its backward products: one block; a
// 512-long data-gradient reduction: 256), and uses other kernels for some shapes (7 rows by
// 1000 inputs differ under every block length). So nothing is assumed: before a graph uses
// the op for a shape, fc_kernel_blocks runs MXNet's operator, forward and backward, on random
// data against our kernels, finds each product's block length on the first draw, and
// confirms all three (and the bias gradient) bit for bit on the rest. A shape that differs
// anywhere, or any failure, keeps MXNet's operator.
//
// Used in graphs MXNet's autograd does not record (a backward() inside the graph is MXNet's
// gradient pass, which then makes our op's backward node), on float32 2-D data on the CPU. A
// graph without a backward() inside never runs the op's backward: there the forward alone is
// checked (W4's batched input projections, 800 rows, have a weight gradient no block length
// reproduces, and a forward that agrees).
#pragma once
#include <string>
#include <vector>

#include "trace.h"

namespace minpy {

// Multiply-adds (rows x in x out) from which a FullyConnected runs on our kernels (fc_kernel_attrs):
// 4M, or MINPY_JIT_FC_MIN_WORK when set (0 takes every shape: the fuzzer's setting, so that
// its small programs run our kernels).
int64_t fc_min_multiply_adds();

// Multiply-adds below which our kernels run a product on one thread: such products become
// _minpy_fc too (fc_kernel_attrs). 0 when MINPY_JIT_FC_MIN_WORK is set (its floor alone decides).
int64_t fc_serial_multiply_adds();

struct FcBlocks {
  int64_t kc = 0, kc_data = 0, kc_weight = 0;  // reduction blocks: forward, data and weight gradients
};

// Whether _minpy_fc computes FullyConnected (`creator`, `attrs`) on `data` (rows, in) by
// `weight` (out, in) bit for bit, forward (and with `backward`, the data, weight and bias
// gradients too), under the training flag `training`; the block lengths in `blocks` when it
// does (-1 for the gradients' when not checked: the op's backward then refuses to run).
// Checked once per process and shape.
bool fc_kernel_blocks(AtomicSymbolCreator creator, const std::vector<Attr>& attrs, const AVal& data,
                      const AVal& weight, bool bias, bool training, bool backward, FcBlocks* blocks);

// Per value of `t`: 1 if the gradient of `t`'s backward() node (if any) reaches it, i.e. it is
// one of the backward's variables or computed from one before the backward.
std::vector<char> gradient_reach(const Trace& t);

// The op's attributes if node `n`'s FullyConnected runs as _minpy_fc in the graph `t` lowers
// to (the data and shapes fit, the work is large enough, and the bit check passed); else
// none. `reach`: gradient_reach(t).
std::vector<Attr> fc_kernel_attrs(const Trace& t, const Node& n, const std::vector<char>& reach);

// Whether _minpy_fc's act=relu epilogue gives MXNet's Activation(act_type='relu') bits on `out`
// (float32, 2-D, CPU), forward and backward, under the training flag `training`: MXNet's operator
// against our functions on a draw pairing every special value (+-0, +-inf, NaN, subnormals,
// negatives) of the data with every one of the head gradient, and wide random values. Checked
// once per process and shape.
bool relu_epilogue_exact(const AVal& out, bool training);

// MXNet's gradient pass makes _backward__minpy_fc for our op: a node without a gradient, which
// CachedOp (it differentiates every graph) accepts only behind a BlockGrad per output, three
// launches more per layer. The pass's node is emitted as _minpy_fc_grad instead, the same
// computation as an op with a gradient (fc_op.cc). For a pass node `op` with attribute `act`
// and `num_inputs` inputs [dY, X, W, (b), Y]: that op, and in `keep` the inputs it reads;
// nullptr for any other node.
const char* own_gradient_op(const std::string& op, const std::string& act, size_t num_inputs,
                            std::vector<size_t>* keep);

}  // namespace minpy
