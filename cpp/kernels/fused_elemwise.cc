// _minpy_fused_elemwise: runs a small SSA program of elementwise float32
// instructions over one iteration space, in tiles.
//
// Why an interpreter: the runtime fuses chains of elementwise MXNet ops into
// one node; instead of compiling C++ per chain, the chain is passed as an
// attribute string and parsed once per graph node (stateful op). Each
// instruction runs as one simple, vectorized loop over a tile of TILE
// elements held in small per-register buffers that stay in L1, so the
// interpretation cost is one switch per instruction per tile.
//
// In-place safety: per tile, all loads run before any output is stored, and
// tiles never overlap, so an output may share memory with an input that is
// read with the same contiguous access.
//
// Threads: a call with enough work splits its tiles between the engine worker
// that runs the op and our helper threads (parallel.h: how many, and why not
// OpenMP); small calls stay on the calling thread, where waking a helper would
// cost more than it saves.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "mxnet/lib_api.h"

#include "attrs.h"
#include "fused_ssa.h"
#include "libm_check.h"
#include "onednn_eltwise_loops.h"
#include "parallel.h"
#include "vmath.h"
#include "vmath_avx512.h"

using namespace mxnet::ext;

namespace minpy_kernels {
namespace fused {
namespace {

constexpr int64_t kTile = 512;  // floats per register buffer (2 KiB): a few live ones fit L1
// Work (elements x instruction cost, a transcendental counting kHeavyCost) below which a
// call runs on one thread: about 100 us of single-thread time (W4's gate blocks, 2K
// elements, stay serial; W2's 1M-element chain splits).
constexpr int64_t kParallelWork = int64_t(1) << 20;
// ... and the work from which it takes a helper that is awake already (parallel.h,
// helpers_awake: a GEMM just before, as an LSTM cell's gates follow their product): W4's
// cell, 2K elements of three sigmoids and two tanh (~100K), 7 us on one thread.
constexpr int64_t kAwakeParallelWork = int64_t(1) << 15;
constexpr int64_t kHeavyCost = 8;

struct Program {
  int num_inputs = 0, num_outputs = 0;
  int64_t rows = 1, cols = 1;    // iteration space R x C
  bool flat = false;             // every live load is contiguous or broadcast
  std::vector<Access> access;
  std::vector<Instr> once;       // constants and broadcast loads: filled once per call
  std::vector<Instr> per_tile;   // everything else, in program order
  std::vector<int> out_buf;      // buffer holding each output
  int num_bufs = 0;
  int64_t cost_per_elem = 0;     // per-tile instructions, a transcendental weighing kHeavyCost
};

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

bool heavy(OpCode op) {
  return op == kSigmoid || op == kSigmoidF32 || op == kTanh || op == kExp || op == kLog || op == kSoftrelu ||
         op == kTanhDnnl || op == kSigmoidDnnl || op == kTanhDnnlGrad || op == kSigmoidDnnlGrad;
}

int parse_reg(const std::string& tok, int limit, const std::string& ins) {
  int64_t r = parse_int(tok);
  if (r < 0 || r >= limit) fail("register " + tok + " is not defined before instruction '" + ins + "'");
  return static_cast<int>(r);
}

// Liveness, hoisting and register-buffer allocation of an SSA program.
Program compile(const Ssa& f) {
  Program p;
  p.num_inputs = f.num_inputs;
  p.num_outputs = f.num_outputs;
  p.rows = f.rows;
  p.cols = f.cols;
  p.access = f.access;
  const std::vector<Raw>& raw = f.code;
  const int nreg = static_cast<int>(raw.size());
  const std::vector<int>& out_reg = f.outputs;

  // Liveness: drop dead instructions; remember each register's last use.
  const int kForever = nreg;
  std::vector<bool> live(nreg, false);
  std::vector<int> last_use(nreg, -1);
  for (int r : out_reg) { live[r] = true; last_use[r] = kForever; }
  for (int i = nreg - 1; i >= 0; --i) {
    if (!live[i]) continue;
    for (int u : raw[i].uses) { live[u] = true; last_use[u] = std::max(last_use[u], i); }
  }

  // Broadcast loads and constants are hoisted: one buffer each, filled once per call.
  auto hoisted = [&](int i) {
    return raw[i].ins.op == kConst || (raw[i].ins.op == kLd && p.access[raw[i].ins.input].broadcast());
  };
  // Buffer allocation: a destination never shares a buffer with its operands
  // (so kernels can use __restrict), and buffers of dead registers are recycled.
  std::vector<int> buf_of(nreg, -1), free_bufs;
  p.flat = true;
  for (int i = 0; i < nreg; ++i) {
    if (!live[i]) continue;
    Instr ins = raw[i].ins;
    if (hoisted(i)) {
      ins.dst = buf_of[i] = p.num_bufs++;
      p.once.push_back(ins);
      continue;
    }
    if (ins.op == kLd) {
      const Access& a = p.access[ins.input];
      if (!(a.col_stride == 1 && a.row_stride == p.cols)) p.flat = false;
    }
    if (!free_bufs.empty()) { buf_of[i] = free_bufs.back(); free_bufs.pop_back(); }
    else buf_of[i] = p.num_bufs++;
    ins.dst = buf_of[i];
    if (raw[i].uses.size() > 0) ins.a = buf_of[raw[i].uses[0]];
    if (raw[i].uses.size() > 1) ins.b = buf_of[raw[i].uses[1]];
    p.per_tile.push_back(ins);
    p.cost_per_elem += heavy(ins.op) ? kHeavyCost : 1;
    for (int u : raw[i].uses) {
      if (last_use[u] == i && !hoisted(u)) {
        last_use[u] = -1;  // freed once even if used twice by this instruction
        free_bufs.push_back(buf_of[u]);
      }
    }
  }
  for (int r : out_reg) p.out_buf.push_back(buf_of[r]);
  return p;
}

}  // namespace

Ssa parse_ssa(const AttrMap& attrs) {
  Ssa p;
  p.num_inputs = static_cast<int>(parse_int(attr(attrs, "num_inputs")));
  p.num_outputs = static_cast<int>(parse_int(attr(attrs, "num_outputs")));
  if (p.num_inputs < 0 || p.num_outputs < 1) fail("bad num_inputs/num_outputs");
  p.num_saved = static_cast<int>(parse_int(attr_or(attrs, "saved", "0")));
  if (p.num_saved < 0 || p.num_saved >= p.num_outputs) fail("bad saved: " + std::to_string(p.num_saved));
  p.out_shape = parse_int_tuple(attr(attrs, "out_shape"));
  for (int64_t d : p.out_shape) if (d < 0) fail("negative dim in out_shape");
  p.cols = p.out_shape.empty() ? 1 : p.out_shape.back();
  p.rows = 1;
  for (size_t i = 0; i + 1 < p.out_shape.size(); ++i) p.rows *= p.out_shape[i];

  // access: "off,rs,cs;off,rs,cs;..."
  std::string acc = attr_or(attrs, "access", "");
  if (p.num_inputs > 0) {
    auto parts = split(acc, ';');
    if (static_cast<int>(parts.size()) != p.num_inputs)
      fail("access has " + std::to_string(parts.size()) + " descriptors for " +
           std::to_string(p.num_inputs) + " inputs");
    for (const auto& part : parts) {
      auto v = split(part, ',');
      if (v.size() != 3) fail("access descriptor '" + part + "' is not 'offset,row_stride,col_stride'");
      p.access.push_back({parse_int(v[0]), parse_int(v[1]), parse_int(v[2])});
      if (p.access.back().offset < 0) fail("negative offset in access '" + part + "'");
    }
  }

  // Instructions in SSA form (operands are register ids).
  std::vector<Raw>& raw = p.code;
  for (const auto& text : split(attr(attrs, "program"), ';')) {
    auto tok = split(text, ' ');
    int n = static_cast<int>(raw.size());
    Raw r;
    const std::string& name = tok[0];
    auto need = [&](size_t k) {
      if (tok.size() != k) fail("instruction '" + text + "' needs " + std::to_string(k - 1) + " operands");
    };
    if (name == "ld") {
      need(2);
      r.ins.op = kLd;
      r.ins.input = static_cast<int>(parse_int(tok[1]));
      if (r.ins.input < 0 || r.ins.input >= p.num_inputs) fail("'" + text + "': no such input");
    } else if (name == "c") {
      need(2);
      r.ins.op = kConst;
      r.ins.f0 = parse_float(tok[1]);
    } else if (name == "clip") {
      need(4);
      r.ins.op = kClip;
      r.uses = {parse_reg(tok[1], n, text)};
      r.ins.f0 = parse_float(tok[2]);
      r.ins.f1 = parse_float(tok[3]);
    } else if (name == "clip_grad") {
      need(5);
      r.ins.op = kClipGrad;
      r.uses = {parse_reg(tok[1], n, text), parse_reg(tok[2], n, text)};
      r.ins.f0 = parse_float(tok[3]);
      r.ins.f1 = parse_float(tok[4]);
    } else {
      const OpName* found = nullptr;
      for (const auto& o : kOps) if (name == o.name) found = &o;
      if (!found) fail("unknown instruction '" + text + "'");
      need(1 + found->arity);
      r.ins.op = found->code;
      for (int k = 0; k < found->arity; ++k) r.uses.push_back(parse_reg(tok[1 + k], n, text));
    }
    raw.push_back(r);
  }
  const int nreg = static_cast<int>(raw.size());
  for (const auto& s : split(attr(attrs, "outputs"), ',')) p.outputs.push_back(parse_reg(s, nreg, "outputs"));
  if (static_cast<int>(p.outputs.size()) != p.num_outputs)
    fail("outputs lists " + std::to_string(p.outputs.size()) + " registers for " +
         std::to_string(p.num_outputs) + " outputs");
  return p;
}

namespace {

// ---- kernels: tiny loops, inlined into the target_clones'd executor ----
#define KI static inline __attribute__((always_inline))

template <class F>
KI void unary(float* __restrict d, const float* __restrict a, int64_t n, F f) {
  for (int64_t j = 0; j < n; ++j) d[j] = f(a[j]);
}
template <class F>
KI void binary(float* __restrict d, const float* __restrict a, const float* __restrict b,
               int64_t n, F f) {
  for (int64_t j = 0; j < n; ++j) d[j] = f(a[j], b[j]);
}
KI void fill(float* __restrict d, float v, int64_t n) {
  for (int64_t j = 0; j < n; ++j) d[j] = v;
}
KI void gather(float* __restrict d, const float* __restrict s, int64_t stride, int64_t n) {
  if (stride == 1) std::memcpy(d, s, n * sizeof(float));
  else if (stride == 0) fill(d, s[0], n);
  else for (int64_t j = 0; j < n; ++j) d[j] = s[j * stride];
}

// Semantics follow MXNet 1.9.1's float32 functors (src/operator/mshadow_op.h).
// tanh, exp and sigmoid equal eager's libm results (vmath.h's reproductions where they
// match this machine's libm, libm itself otherwise); log calls libm's logf, whose table-driven
// algorithm is not reproduced here.
// A NaN input's result as eager's scalar code gives it: the input's NaN, its sign flipped when
// the code negates it first (mshadow's -x in sigmoid), made quiet; expf's x + x and the
// arithmetic after it keep sign and payload. Set in integer bits: GCC may fold a float negation
// into the multiplications inside exp (value-safe, but a NaN keeps its sign then), and did in the
// vectorized loop (sigmoid of +NaN gave +NaN where eager gives -NaN; the scalar tail was right).
template <bool kNegate>
KI float nan_as_eager(float x, float r) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  b = (kNegate ? b ^ 0x80000000u : b) | 0x00400000u;
  float q;
  std::memcpy(&q, &b, sizeof q);
  return x != x ? q : r;
}

// post(expf(x)) per element, or post(expf(-x)) (kNegate), with the exp form this machine's libm
// needs.
template <bool kNegate, class Post>
KI void exp_of(float* __restrict d, const float* __restrict a, int64_t n, const LibmForms& libm,
               const uint64_t* table, Post post) {
  switch (libm.exp) {
    case ExpForm::kFused:
      unary(d, a, n, [=](float x) {
        return nan_as_eager<kNegate>(x, post(vm::expf_glibc<true>(kNegate ? -x : x, table)));
      });
      break;
    case ExpForm::kUnfused:
      unary(d, a, n, [=](float x) {
        return nan_as_eager<kNegate>(x, post(vm::expf_glibc<false>(kNegate ? -x : x, table)));
      });
      break;
    case ExpForm::kLibm:
      unary(d, a, n, [=](float x) { return nan_as_eager<kNegate>(x, post(::expf(kNegate ? -x : x))); });
      break;
  }
}

// True when the CPU has AVX-512: the loops of vmath_avx512.cc may run.
KI bool wide_lanes() {
  static const bool wide = __builtin_cpu_supports("avx512f");
  return wide;
}

// True when the CPU has AVX2 and FMA: onednn_eltwise_avx2.cc's loops may run.
KI bool avx2_fma() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

// oneDNN's Activation forward (alg 0 tanh, 1 sigmoid) and its backward from the input x.
KI void onednn_fwd(int alg, float* d, const float* a, int64_t n) {
  if (wide_lanes()) onednn_fwd_loop_avx512(alg, d, a, n);
  else if (avx2_fma()) onednn_fwd_loop_avx2(alg, d, a, n);
  else onednn_fwd_loop_baseline(alg, d, a, n);
}
KI void onednn_bwd(int alg, float* d, const float* x, const float* g, int64_t n) {
  if (wide_lanes()) onednn_bwd_loop_avx512(alg, d, x, g, n);
  else if (avx2_fma()) onednn_bwd_loop_avx2(alg, d, x, g, n);
  else onednn_bwd_loop_baseline(alg, d, x, g, n);
}

KI void run_instr(const Instr& in, float* const* buf, int64_t n, const LibmForms& libm, const uint64_t* table) {
  float* d = buf[in.dst];
  const float* a = in.a >= 0 ? buf[in.a] : nullptr;
  const float* b = in.b >= 0 ? buf[in.b] : nullptr;
  switch (in.op) {
    case kNeg: unary(d, a, n, [](float x) { return -x; }); break;
    case kAbs: unary(d, a, n, [](float x) { return __builtin_fabsf(x); }); break;
    // Activation(act_type='relu'): NaN -> 0
    case kRelu: unary(d, a, n, [](float x) { return x > 0.0f ? x : 0.0f; }); break;
    // the standalone relu operator (mx.nd.relu): NaN stays NaN
    case kReluNan: unary(d, a, n, [](float x) { return x != x ? x : (x > 0.0f ? x : 0.0f); }); break;
    case kSigmoid: unary(d, a, n, [](float x) { return vm::sigmoid_f(x); }); break;
    case kSigmoidF32:  // mshadow's 1.0f / (1.0f + expf(-x))
      exp_of<true>(d, a, n, libm, table, [](float e) { return 1.0f / (1.0f + e); });
      break;
    case kTanh:
      if (libm.tanh_reproduced && wide_lanes()) vm::tanhf_loop_avx512(d, a, n);
      else if (libm.tanh_reproduced) vm::tanhf_fdlibm_loop<vm::F8>(d, a, n);
      else unary(d, a, n, [](float x) { return ::tanhf(x); });
      break;
    case kExp: exp_of<false>(d, a, n, libm, table, [](float e) { return e; }); break;
    case kTanhDnnl: onednn_fwd(0, d, a, n); break;
    case kSigmoidDnnl: onednn_fwd(1, d, a, n); break;
    case kTanhDnnlGrad: onednn_bwd(0, d, a, b, n); break;      // a: the activation's input, b: its gradient
    case kSigmoidDnnlGrad: onednn_bwd(1, d, a, b, n); break;
    // Below zero (-inf too) eager MXNet's log gives +NaN (0x7fc00000) where glibc's logf gives
    // its default NaN, -NaN (0xffc00000): the wheel's log never reaches logf's invalid case. A
    // NaN input passes through both ways (tests/test_fusion.py: test_log_of_negatives_*).
    case kLog:
      unary(d, a, n, [](float x) { return x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : ::logf(x); });
      break;
    case kSqrt: unary(d, a, n, [](float x) { return __builtin_sqrtf(x); }); break;
    case kRsqrt: unary(d, a, n, [](float x) { return 1.0f / __builtin_sqrtf(x); }); break;
    case kSquare: unary(d, a, n, [](float x) { return x * x; }); break;
    case kRecip: unary(d, a, n, [](float x) { return 1.0f / x; }); break;
    case kSoftrelu: unary(d, a, n, [](float x) { return vm::softrelu_f(x); }); break;
    case kSoftsign: unary(d, a, n, [](float x) { return x / (1.0f + __builtin_fabsf(x)); }); break;
    case kAdd: binary(d, a, b, n, [](float x, float y) { return x + y; }); break;
    case kSub: binary(d, a, b, n, [](float x, float y) { return x - y; }); break;
    case kMul: binary(d, a, b, n, [](float x, float y) { return x * y; }); break;
    case kDiv: binary(d, a, b, n, [](float x, float y) { return x / y; }); break;
    // maximum/minimum propagate a NaN from either side
    case kMax: binary(d, a, b, n, [](float x, float y) {
      return x != x ? x : (y != y ? y : (x > y ? x : y)); }); break;
    case kMin: binary(d, a, b, n, [](float x, float y) {
      return x != x ? x : (y != y ? y : (x < y ? x : y)); }); break;
    case kSign: unary(d, a, n, [](float x) { return x < 0.0f ? -1.0f : (x > 0.0f ? 1.0f : 0.0f); }); break;
    case kStep: unary(d, a, n, [](float x) { return x > 0.0f ? 1.0f : 0.0f; }); break;
    case kStepNan: unary(d, a, n, [](float x) { return x != x ? x : (x > 0.0f ? 1.0f : 0.0f); }); break;
    case kClipGrad: {
      // MXNet's clip backward: the gradient passes unless x is outside [lo, hi] (NaN passes).
      const float lo = in.f0, hi = in.f1;
      binary(d, a, b, n, [lo, hi](float g, float x) { return (x > hi || x < lo) ? 0.0f : g; });
      break;
    }
    case kClip: {
      // MXNet's clip operator tests the upper bound first (matters only if lo > hi).
      const float lo = in.f0, hi = in.f1;
      unary(d, a, n, [lo, hi](float x) { return x > hi ? hi : (x < lo ? lo : x); });
      break;
    }
    default: break;  // kLd / kConst handled by the caller
  }
}

struct Call {
  const Program* p;
  const float* const* in;   // input data pointers
  float* const* out;        // output data pointers
};

// The iteration space in tiles: short rows are packed several to a tile, long rows
// are split into tiles; tile k is row block k / col_tiles, column block k % col_tiles.
struct Tiling {
  int64_t R, C, rows_per_tile, row_tiles, col_tiles;
  explicit Tiling(const Program& p) {
    R = p.flat ? 1 : p.rows;
    C = p.flat ? p.rows * p.cols : p.cols;
    rows_per_tile = (C >= kTile) ? 1 : std::max<int64_t>(1, kTile / std::max<int64_t>(C, 1));
    row_tiles = (R + rows_per_tile - 1) / rows_per_tile;
    col_tiles = (C + kTile - 1) / kTile;
  }
  int64_t count() const { return row_tiles * col_tiles; }
};

// Runs tiles [t0, t1) with register buffers `buf` (num_bufs x kTile floats). The one
// function compiled per ISA: everything it calls is inlined, so the AVX2 / AVX-512
// clones vectorize all the instruction loops.
__attribute__((target_clones("avx512f", "avx2", "default")))
void execute_tiles(const Call& c, float* const* buf, int64_t t0, int64_t t1) {
  const Program& p = *c.p;
  const Tiling tl(p);
  static const LibmForms& libm = libm_forms();
  static const uint64_t* const table = vm::exp2_table().bits;
  for (const Instr& ins : p.once) {
    if (ins.op == kConst) fill(buf[ins.dst], ins.f0, kTile);
    else fill(buf[ins.dst], c.in[ins.input][p.access[ins.input].offset], kTile);
  }
  const int64_t R = tl.R, C = tl.C;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t r0 = (t / tl.col_tiles) * tl.rows_per_tile;
    const int64_t c0 = (t % tl.col_tiles) * kTile;
    const int64_t nr = std::min(tl.rows_per_tile, R - r0);
    const int64_t nc = std::min(kTile, C - c0);
    const int64_t n = nr * nc;
    for (const Instr& ins : p.per_tile) {
      if (ins.op == kLd) {
        const Access& a = p.access[ins.input];
        const float* base = c.in[ins.input] + a.offset + c0 * a.col_stride;
        if (p.flat) {
          std::memcpy(buf[ins.dst], base, n * sizeof(float));
        } else {
          for (int64_t i = 0; i < nr; ++i)
            gather(buf[ins.dst] + i * nc, base + (r0 + i) * a.row_stride, a.col_stride, nc);
        }
      } else {
        run_instr(ins, buf, n, libm, table);
      }
    }
    // Stores last: in-place outputs only overwrite what this tile already loaded.
    // Outputs are contiguous (R, C); a tile is either whole rows or part of one row.
    for (int k = 0; k < p.num_outputs; ++k)
      if (c.out[k]) std::memcpy(c.out[k] + r0 * C + c0, buf[p.out_buf[k]], n * sizeof(float));
  }
}

// One thread's share: its own register buffers (thread-local scratch, 64-byte aligned).
void run_share(const Call& c, int64_t t0, int64_t t1) {
  if (t0 >= t1) return;
  const Program& p = *c.p;
  thread_local std::vector<float> scratch;
  const size_t need = static_cast<size_t>(p.num_bufs) * kTile + 16;
  if (scratch.size() < need) scratch.resize(need);
  float* base = scratch.data();
  base += (16 - (reinterpret_cast<uintptr_t>(base) / sizeof(float)) % 16) % 16;
  thread_local std::vector<float*> bufs;
  bufs.resize(p.num_bufs);
  for (int i = 0; i < p.num_bufs; ++i) bufs[i] = base + i * kTile;
  execute_tiles(c, bufs.data(), t0, t1);
}

// Threads worth using for this call (parallel.h): 1 below kParallelWork (kAwakeParallelWork
// while a helper is awake), else up to max_threads(), each thread getting at least half that.
int threads_for(const Program& p, int64_t tiles, bool awake) {
  const int64_t work = p.rows * p.cols * std::max<int64_t>(p.cost_per_elem, 1);
  const int64_t min_work = (awake ? kAwakeParallelWork : kParallelWork) / 2;
  return tiles < 2 ? 1 : static_cast<int>(std::min<int64_t>(tiles, threads_for_work(work, min_work)));
}

void execute(const Call& c) {
  const int64_t tiles = Tiling(*c.p).count();
  const bool awake = helpers_awake();
  const int nt = threads_for(*c.p, tiles, awake);
  const int64_t chunk = nt <= 1 ? tiles : std::max<int64_t>(1, std::min<int64_t>(16, tiles / (8 * nt)));
  // Helpers taken awake stay awake as the GEMM asked: the next product follows.
  const int64_t linger = awake && nt > 1 ? idle_spin_ns() : 0;
  parallel_chunks(tiles, chunk, nt, [&c](int64_t t0, int64_t t1) { run_share(c, t0, t1); }, linger);
}

// ---- MXNet glue ----

MXReturnValue report(const std::exception& e) {
  MX_ERROR_MSG << "_minpy_fused_elemwise: " << e.what();
  return MX_FAIL;
}

// Runs compiled program p over MXNet's tensors after checking them against it; false, with
// the reason in `why`, if they do not fit. An output without memory (a gradient MXNet does
// not want: kNullOp) is skipped.
bool run_checked(const Program& p, const std::vector<MXTensor>& inputs, const std::vector<MXTensor>& outputs,
                 std::string* why) {
  if (static_cast<int>(inputs.size()) != p.num_inputs || static_cast<int>(outputs.size()) != p.num_outputs) {
    *why = std::to_string(inputs.size()) + " inputs and " + std::to_string(outputs.size()) +
           " outputs for a program of " + std::to_string(p.num_inputs) + " and " + std::to_string(p.num_outputs);
    return false;
  }
  const int64_t total = p.rows * p.cols;
  if (total == 0) return true;
  std::vector<const float*> in(p.num_inputs);
  std::vector<float*> out(p.num_outputs);
  for (int j = 0; j < p.num_inputs; ++j) {
    const MXTensor& t = inputs[j];
    const Access& a = p.access[j];
    // Bounds check of the descriptor against the real input (strides may be negative).
    int64_t lo = a.offset, hi = a.offset;
    for (int64_t s : {a.row_stride * (p.rows - 1), a.col_stride * (p.cols - 1)}) {
      if (s < 0) lo += s; else hi += s;
    }
    if (t.dtype != kFloat32 || lo < 0 || hi >= const_cast<MXTensor&>(t).size() || !t.data_ptr) {
      *why = "input " + std::to_string(j) + " is not float32 or its access " + std::to_string(a.offset) + "," +
             std::to_string(a.row_stride) + "," + std::to_string(a.col_stride) + " reads outside its " +
             std::to_string(const_cast<MXTensor&>(t).size()) + " elements";
      return false;
    }
    in[j] = static_cast<const float*>(t.data_ptr);
  }
  for (int k = 0; k < p.num_outputs; ++k) {
    const MXTensor& t = outputs[k];
    if (!t.data_ptr) continue;
    if (t.dtype != kFloat32 || const_cast<MXTensor&>(t).size() != total) {
      *why = "output " + std::to_string(k) + " must be float32 of size " + std::to_string(total);
      return false;
    }
    out[k] = static_cast<float*>(t.data_ptr);
  }
  // Register buffers are per thread: safe if the same graph runs on several threads.
  Call call{&p, in.data(), out.data()};
  execute(call);
  return true;
}

MXReturnValue run(const Program& p, const std::vector<MXTensor>& inputs, const std::vector<MXTensor>& outputs,
                  const char* what) {
  std::string why;
  if (run_checked(p, inputs, outputs, &why)) return MX_SUCCESS;
  MX_ERROR_MSG << "_minpy_fused_elemwise" << what << ": " << why;
  return MX_FAIL;
}

// One per graph node. MXNet hands the backward node (_backward__minpy_fused_elemwise) the
// forward node's state, so the gradient program is derived from the same SSA, once, when
// the node first runs backward.
class FusedState : public CustomStatefulOp {
 public:
  explicit FusedState(Ssa ssa) : ssa_(std::move(ssa)), prog_(compile(ssa_)) {}

  MXReturnValue Forward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                        const OpResource&) override {
    return run(prog_, *inputs, *outputs, "");
  }

  // inputs: [output gradients, forward inputs, forward outputs]; outputs: input gradients.
  // lib_api.h passes no write/add request: a gradient is always written, never added. The
  // runtime's graphs read a graph input that only this op reads and that may be a variable
  // with grad_req='add' through _copy (graph.cc), whose backward honours it; a direct call of
  // the op under autograd on such an array would overwrite its gradient.
  MXReturnValue Backward(std::vector<MXTensor>* inputs, std::vector<MXTensor>* outputs,
                         const OpResource&) override {
    std::call_once(grad_once_, [this] {
      try {
        grad_ = compile(gradient_ssa(ssa_));
      } catch (const std::exception& e) {
        grad_error_ = e.what();
      }
    });
    if (!grad_error_.empty()) {
      MX_ERROR_MSG << "_minpy_fused_elemwise backward: " << grad_error_;
      return MX_FAIL;
    }
    return run(grad_, *inputs, *outputs, " backward");
  }

 private:
  Ssa ssa_;
  Program prog_;
  std::once_flag grad_once_;
  Program grad_;
  std::string grad_error_;
};

MXReturnValue parse_attrs(const AttrMap& attrs, int* num_in, int* num_out) {
  try {
    *num_in = static_cast<int>(parse_int(attr(attrs, "num_inputs")));
    *num_out = static_cast<int>(parse_int(attr(attrs, "num_outputs")));
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue infer_type(const AttrMap&, std::vector<int>* in_types, std::vector<int>* out_types) {
  for (size_t j = 0; j < in_types->size(); ++j) {
    if ((*in_types)[j] != kFloat32) {
      MX_ERROR_MSG << "_minpy_fused_elemwise: input " << j << " must be float32";
      return MX_FAIL;
    }
  }
  for (auto& t : *out_types) t = kFloat32;
  return MX_SUCCESS;
}

MXReturnValue infer_shape(const AttrMap& attrs, std::vector<std::vector<unsigned int>>*,
                          std::vector<std::vector<unsigned int>>* out_shapes) {
  try {
    auto shape = parse_int_tuple(attr(attrs, "out_shape"));
    for (auto& s : *out_shapes) s.assign(shape.begin(), shape.end());
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

MXReturnValue create_state(const AttrMap& attrs, const MXContext&,
                           const std::vector<std::vector<unsigned int>>&, const std::vector<int>,
                           CustomStatefulOp** state) {
  try {
    *state = CustomStatefulOp::create<FusedState>(parse_ssa(attrs));
    return MX_SUCCESS;
  } catch (const std::exception& e) { return report(e); }
}

}  // namespace

// ---- direct runs: the runtime launching a one-kernel graph itself (cpp/src/kernel_launch.cc) ----

// A compiled program of the op's attributes (as a graph node carries them), null if they do not
// parse; freed by minpy_fused_program_free.
extern "C" __attribute__((visibility("default"))) void* minpy_fused_program_create(int num_attrs,
                                                                                  const char* const* keys,
                                                                                  const char* const* vals) {
  try {
    return new Program(compile(parse_ssa(attr_map(num_attrs, keys, vals))));
  } catch (const std::exception&) {
    return nullptr;
  }
}

// The backward of the unit with these attributes (MXNet's _backward__minpy_fused_elemwise node
// carries the forward's): inputs [output gradients, forward inputs, forward outputs], outputs
// the input gradients, as FusedState::Backward runs it. Run by minpy_fused_program_run.
extern "C" __attribute__((visibility("default"))) void* minpy_fused_grad_program_create(int num_attrs,
                                                                                       const char* const* keys,
                                                                                       const char* const* vals) {
  try {
    return new Program(compile(gradient_ssa(parse_ssa(attr_map(num_attrs, keys, vals)))));
  } catch (const std::exception&) {
    return nullptr;
  }
}

extern "C" __attribute__((visibility("default"))) void minpy_fused_program_free(void* program) {
  delete static_cast<Program*>(program);
}

// One run over float32 arrays of `in_sizes` / `out_sizes` elements (an output pointer may be
// null: not wanted). Returns null, or the reason the arrays do not fit the program (the
// bounds check Forward makes), in storage that lives as long as the thread.
extern "C" __attribute__((visibility("default"))) const char* minpy_fused_program_run(
    const void* program, const float* const* in, const int64_t* in_sizes, float* const* out,
    const int64_t* out_sizes) {
  const Program& p = *static_cast<const Program*>(program);
  thread_local std::string why;
  std::vector<MXTensor> inputs(p.num_inputs), outputs(p.num_outputs);
  auto tensor = [](MXTensor& t, const void* data, int64_t n) {
    t.data_ptr = const_cast<void*>(data);
    t.shape = {n};
    t.dtype = kFloat32;
  };
  for (int j = 0; j < p.num_inputs; ++j) tensor(inputs[j], in[j], in_sizes[j]);
  for (int k = 0; k < p.num_outputs; ++k) tensor(outputs[k], out[k], out_sizes[k]);
  return run_checked(p, inputs, outputs, &why) ? nullptr : why.c_str();
}

REGISTER_OP(_minpy_fused_elemwise)
    .setParseAttrs(parse_attrs)
    .setInferType(infer_type)
    .setInferShape(infer_shape)
    .setCreateOpState(create_state, "cpu");

}  // namespace fused
}  // namespace minpy_kernels
