// Batched projections: one GEMM for a weight's independent row blocks.
//
// A recurrent cell stepped over a sequence multiplies every step's input by the same weight:
// FullyConnected(x_t, W, b) for t = 1..T, none reading another's result. In a graph those
// become one FullyConnected over the rows of all the x_t (Concat on axis 0), and each step's
// result is a block of its rows: slice_axis(axis=0), which a fused unit reads in place
// (fuse.cc, row_block) and any other reader gets as a copy. W4's 50 input projections of 16
// rows each cost 546 us in a CachedOp, one Concat and one 800-row call 284 us.
//
// Exactness: eager MXNet runs each step's GEMM on its own rows. The batched call gives the
// same bits only if MXNet's kernel computes every output row alike for both row counts, which
// the kernel library decides by shape (oneDNN on this machine kind: yes for 50 x (16, 64) by
// (512, 64), no for 8 x (64, 784) by (256, 784)). So every shape is checked once per process
// before it is batched (row_blocks_exact): MXNet's own operator, on random data on the graph's
// context under its training flag, run on each block alone and on all rows at once; a bit
// that differs, or any failure, keeps the projections apart (projections.cc, check_row_blocks:
// which draws, and how many).
//
// Batched only: traces run without autograd (a batched weight gradient would sum in another
// order); float32 2-D data of a multiple of 16 rows (projections.cc, kRowMultiple), each
// block's data made before the group's first projection (the batched call goes there, so no
// node moves); no input that a node of the trace updates in place (aux states); results not
// written into an existing array (out=).
#pragma once
#include <memory>
#include <vector>

#include "trace.h"

namespace minpy {

// `t` with its batchable projections rewritten (node ids change, value ids are kept and new
// values appended), or null if it has none. `live`: the trace nodes its graph keeps.
// `batched`: the projections that became row blocks.
std::shared_ptr<const Trace> batch_projections(const Trace& t, const std::vector<char>& live, int* batched);

// Whether MXNet's FullyConnected (`creator`, `attrs`) computes `blocks` row blocks of `data`
// (rows, in) by `weight` (out, in) bit for bit as one call on all their rows, with the
// training flag `training` (oneDNN's forward differs by it): checked on random data once per
// process and shape (the answer is cached).
bool row_blocks_exact(AtomicSymbolCreator creator, const std::vector<Attr>& attrs, const AVal& data,
                      const AVal& weight, bool bias, int blocks, bool training);

}  // namespace minpy
