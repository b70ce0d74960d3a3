// Developer check (not part of the library): onednn_eltwise.h against MXNet 1.9.1's own
// Activation(act_type='tanh' / 'sigmoid') and its backward (the op _backward_Activation, which
// autograd runs: same oneDNN primitive, checked bit for bit against autograd on 4M inputs), run
// through the C API of the wheel's libmxnet.so on float32 NDArrays.
//
//   all      every one of the 2^32 float bit patterns x, in chunks of 2^24: forward of both
//            functions, and backward with every x times each head gradient of kDys (specials:
//            +-0, +-inf, NaNs, denormals, FLT_MAX, ...), against each form below
//   sample   2^26 random (x, dy) bit-pattern pairs and 2^26 pairs x in [-12, 12], dy normal,
//            against each form; then arrays of 1..100003 elements and of 1 to 5 dimensions
//            (tails: the kernel runs its vector body, then one element at a time), against s
//   time     ns per element, 1M floats uniform in [-8, 8], best of 25: the F8 and F16 loops and
//            MXNet's Activation on the same array (one thread: run with OMP_NUM_THREADS=1)
//
// Forms (this file built five times with different flags, then linked with its main part):
//   s     one float at a time, -mavx2 -mfma -fno-tree-vectorize (a true scalar loop)
//   v8    vm::F8 loop (+ scalar tail), -mavx2 -mfma
//   v16   vm::F16 loop (+ scalar tail), -mavx512f
//   base  one float at a time, x86-64 baseline flags (no FMA: __builtin_fmaf is libm's fmaf)
//   v8c   vm::F8 loop, -mavx2 -mfma -ffp-contract=fast (the results must not depend on it)
// All but v8c with the project's flags (-O3 -ffp-contract=off -fno-math-errno
// -fno-trapping-math). Bits are compared exactly (NaN payloads included).
//
// Build, from the repo root (about 30 s):
//   M=$PWD/.venv/lib/python3.11/site-packages/mxnet; F="-std=c++17 -O3 -fno-math-errno -fno-trapping-math -Icpp/kernels"
//   C=cpp/kernels/dev/onednn_eltwise_check.cc; O=/tmp/odc; mkdir -p $O
//   g++ $F -ffp-contract=off -DODC_PART=s -mavx2 -mfma -fno-tree-vectorize -c $C -o $O/s.o
//   g++ $F -ffp-contract=off -DODC_PART=v8 -mavx2 -mfma -c $C -o $O/v8.o
//   g++ $F -ffp-contract=off -DODC_PART=v16 -mavx512f -c $C -o $O/v16.o
//   g++ $F -ffp-contract=off -DODC_PART=base -c $C -o $O/base.o
//   g++ $F -ffp-contract=fast -DODC_PART=v8c -mavx2 -mfma -c $C -o $O/v8c.o
//   g++ $F -ffp-contract=off -I$M/include $C $O/*.o -o $O/check -L$M -lmxnet -Wl,-rpath,$M
// Run (all: 35-41 min per ISA on this machine, one core; the v16 form needs an AVX-512 CPU):
//   OMP_NUM_THREADS=1 $O/check all                              # oneDNN picks avx512_common here
//   OMP_NUM_THREADS=1 DNNL_MAX_CPU_ISA=AVX2 $O/check all        # oneDNN's avx2 kernels
//   OMP_NUM_THREADS=1 $O/check sample;  OMP_NUM_THREADS=2 $O/check sample;  ... $O/check time
// (DNNL_VERBOSE=1 with `sample` shows which kernel oneDNN ran: jit:avx512_common / jit:avx2.)
#include <cstdint>
#include <cstring>

#ifdef ODC_PART
// ---- a form: the header's functions built with this part's flags --------------------------
#include "onednn_eltwise.h"
#define ODC_CAT2(a, b) a##_##b
#define ODC_CAT(a, b) ODC_CAT2(a, b)
#define ODC_FN(name) ODC_CAT(ODC_CAT(odc, ODC_PART), name)
namespace mk = minpy_kernels;
#define s 1
#define v8 2
#define v16 3
#define base 4
#define v8c 5
#if ODC_PART == s || ODC_PART == base
using V = float;
#elif ODC_PART == v16
using V = mk::vm::F16;
#else
using V = mk::vm::F8;
#endif
#undef s
#undef v8
#undef v16
#undef base
#undef v8c
extern "C" void ODC_FN(fwd)(int alg, const float* x, float* y, int64_t n) {
  if (alg == 0) mk::onednn_fwd_loop<mk::OneDnnAlg::kTanh, V>(y, x, n);
  else mk::onednn_fwd_loop<mk::OneDnnAlg::kLogistic, V>(y, x, n);
}
extern "C" void ODC_FN(bwd)(int alg, const float* x, const float* dy, float* dx, int64_t n) {
  if (alg == 0) mk::onednn_bwd_loop<mk::OneDnnAlg::kTanh, V>(dx, x, dy, n);
  else mk::onednn_bwd_loop<mk::OneDnnAlg::kLogistic, V>(dx, x, dy, n);
}

#else
// ---- the main part: MXNet through its C API, the comparisons -------------------------------
#include <mxnet/c_api.h>
#include <nnvm/c_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

extern "C" {
#define ODC_DECL(p)                                                              \
  void odc_##p##_fwd(int alg, const float* x, float* y, int64_t n);              \
  void odc_##p##_bwd(int alg, const float* x, const float* dy, float* dx, int64_t n);
ODC_DECL(s)
ODC_DECL(v8)
ODC_DECL(v16)
ODC_DECL(base)
ODC_DECL(v8c)
}

namespace {

void check_mx(int rc, const char* what) {
  if (rc != 0) {
    std::fprintf(stderr, "MXNet error in %s: %s\n", what, MXGetLastError());
    std::exit(1);
  }
}

struct Form {
  const char* name;
  void (*fwd)(int, const float*, float*, int64_t);
  void (*bwd)(int, const float*, const float*, float*, int64_t);
  bool bwd_all_dys;  // false: backward only with kDysFew (the slow libm-fmaf form)
};
const Form kForms[] = {
    {"s", odc_s_fwd, odc_s_bwd, true},          {"v8", odc_v8_fwd, odc_v8_bwd, true},
    {"v16", odc_v16_fwd, odc_v16_bwd, true},    {"base", odc_base_fwd, odc_base_bwd, false},
    {"v8c", odc_v8c_fwd, odc_v8c_bwd, true},
};
constexpr int kNumForms = sizeof(kForms) / sizeof(kForms[0]);
const char* const kAlgName[2] = {"tanh", "sigmoid"};

// Head gradients (bit patterns) for the exhaustive backward.
const uint32_t kDys[] = {
    0x3f800000u,  // 1
    0xbf800000u,  // -1
    0x3f000000u,  // 0.5
    0x406ccccdu,  // 3.7
    0x00000000u,  // +0
    0x80000000u,  // -0
    0x7f800000u,  // +inf
    0xff800000u,  // -inf
    0x7fc00000u,  // NaN
    0xffc00000u,  // -NaN (x86's default NaN)
    0x7fa12345u,  // signalling NaN with a payload
    0x00000001u,  // smallest denormal
    0x807fffffu,  // largest negative denormal
    0x00400000u,  // denormal 2^-127
    0x7f7fffffu,  // FLT_MAX
    0x3de3a1f5u,  // 0.111148...   (random)
    0xc2c3b7a1u,  // -97.8587...   (random)
    0x2f0d1c3bu,  // 1.284e-10     (random)
    0x5e8a2c07u,  // 4.98e18       (random)
};
constexpr int kNumDys = sizeof(kDys) / sizeof(kDys[0]);
const bool kDysFew[kNumDys] = {true, false, false, true, true, false, true, false, true,
                               false, false, true, false, false, false, false, false, false, false};

float f_of(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
uint32_t u_of(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

// A 1-D float32 NDArray and its memory.
struct Arr {
  NDArrayHandle h = nullptr;
  float* p = nullptr;
  int64_t n = 0;
  explicit Arr(const std::vector<uint32_t>& shape) {
    n = 1;
    for (uint32_t d : shape) n *= d;
    check_mx(MXNDArrayCreateEx(shape.data(), static_cast<uint32_t>(shape.size()), 1, 0, 0, 0, &h), "create");
    check_mx(MXNDArrayWaitToWrite(h), "wait");
    void* d = nullptr;
    check_mx(MXNDArrayGetData(h, &d), "getdata");
    p = static_cast<float*>(d);
  }
  explicit Arr(int64_t len) : Arr(std::vector<uint32_t>{static_cast<uint32_t>(len)}) {}
  ~Arr() { MXNDArrayFree(h); }
  Arr(const Arr&) = delete;
  Arr& operator=(const Arr&) = delete;
};

struct Mx {
  AtomicSymbolCreator act = nullptr, act_bwd = nullptr;
  Mx() {
    check_mx(NNGetOpHandle("Activation", &act), "op");
    check_mx(NNGetOpHandle("_backward_Activation", &act_bwd), "op");
  }
  void fwd(int alg, Arr& x, Arr& y) {
    const char* keys[] = {"act_type"};
    const char* vals[] = {kAlgName[alg]};
    NDArrayHandle in[] = {x.h};
    NDArrayHandle out_arr[] = {y.h};
    NDArrayHandle* outs = out_arr;
    int nout = 1;
    check_mx(MXImperativeInvoke(act, 1, in, &nout, &outs, 1, keys, vals), "Activation");
    check_mx(MXNDArrayWaitToRead(y.h), "wait");
  }
  // _backward_Activation's inputs, as ActivationGrad orders them: head gradient, output, input.
  void bwd(int alg, Arr& dy, Arr& y, Arr& x, Arr& dx) {
    const char* keys[] = {"act_type"};
    const char* vals[] = {kAlgName[alg]};
    NDArrayHandle in[] = {dy.h, y.h, x.h};
    NDArrayHandle out_arr[] = {dx.h};
    NDArrayHandle* outs = out_arr;
    int nout = 1;
    check_mx(MXImperativeInvoke(act_bwd, 3, in, &nout, &outs, 1, keys, vals), "_backward_Activation");
    check_mx(MXNDArrayWaitToRead(dx.h), "wait");
  }
};

struct Tally {
  uint64_t checked = 0, mismatches = 0, nan_payload_only = 0;
  std::vector<std::string> examples;
};

// Compare ours to ref over n elements; x and (if not null) dy for the examples.
void compare(Tally& t, const float* ours, const float* ref, const float* x, const float* dy, int64_t n) {
  t.checked += n;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = u_of(ours[i]), b = u_of(ref[i]);
    if (a == b) continue;
    ++t.mismatches;
    if (ours[i] != ours[i] && ref[i] != ref[i]) ++t.nan_payload_only;
    if (t.examples.size() < 6) {
      char buf[200];
      if (dy)
        std::snprintf(buf, sizeof buf, "x=%08x (%.9g) dy=%08x (%.9g): ours %08x (%.9g) mxnet %08x (%.9g)",
                      u_of(x[i]), x[i], u_of(dy[i]), dy[i], a, ours[i], b, ref[i]);
      else
        std::snprintf(buf, sizeof buf, "x=%08x (%.9g): ours %08x (%.9g) mxnet %08x (%.9g)", u_of(x[i]), x[i], a,
                      ours[i], b, ref[i]);
      t.examples.push_back(buf);
    }
  }
}

void report(const char* what, const Tally& t) {
  std::printf("%-44s checked %llu, mismatches %llu (NaN payload only: %llu)\n", what,
              (unsigned long long)t.checked, (unsigned long long)t.mismatches,
              (unsigned long long)t.nan_payload_only);
  for (const auto& e : t.examples) std::printf("    %s\n", e.c_str());
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int run_all() {
  const int64_t kChunk = int64_t{1} << 24;
  Mx mx;
  Arr x(kChunk), y(kChunk), dy(kChunk), dx(kChunk);
  std::vector<float> ours(kChunk);
  Tally fwd_t[2][kNumForms], bwd_t[2][kNumForms][kNumDys];
  const double t0 = now();
  for (int64_t c = 0; c < 256; ++c) {
    for (int64_t i = 0; i < kChunk; ++i) x.p[i] = f_of(static_cast<uint32_t>((c << 24) | i));
    for (int alg = 0; alg < 2; ++alg) {
      mx.fwd(alg, x, y);
      for (int f = 0; f < kNumForms; ++f) {
        kForms[f].fwd(alg, x.p, ours.data(), kChunk);
        compare(fwd_t[alg][f], ours.data(), y.p, x.p, nullptr, kChunk);
      }
      for (int k = 0; k < kNumDys; ++k) {
        std::fill(dy.p, dy.p + kChunk, f_of(kDys[k]));
        mx.bwd(alg, dy, y, x, dx);
        for (int f = 0; f < kNumForms; ++f) {
          if (!kForms[f].bwd_all_dys && !kDysFew[k]) continue;
          kForms[f].bwd(alg, x.p, dy.p, ours.data(), kChunk);
          compare(bwd_t[alg][f][k], ours.data(), dx.p, x.p, dy.p, kChunk);
        }
      }
    }
    if (c % 16 == 15) {
      uint64_t mism = 0;
      for (auto& a : fwd_t)
        for (auto& t : a) mism += t.mismatches;
      for (auto& a : bwd_t)
        for (auto& b : a)
          for (auto& t : b) mism += t.mismatches;
      std::printf("chunk %lld/256 done, %.0f s, mismatches so far %llu\n", (long long)c + 1, now() - t0,
                  (unsigned long long)mism);
      std::fflush(stdout);
    }
  }
  for (int alg = 0; alg < 2; ++alg)
    for (int f = 0; f < kNumForms; ++f) {
      std::string w = std::string(kAlgName[alg]) + " forward, form " + kForms[f].name;
      report(w.c_str(), fwd_t[alg][f]);
    }
  for (int alg = 0; alg < 2; ++alg)
    for (int f = 0; f < kNumForms; ++f) {
      Tally sum;
      int used = 0;
      for (int k = 0; k < kNumDys; ++k) {
        const Tally& t = bwd_t[alg][f][k];
        if (t.checked == 0) continue;
        ++used;
        sum.checked += t.checked;
        sum.mismatches += t.mismatches;
        sum.nan_payload_only += t.nan_payload_only;
        for (const auto& e : t.examples)
          if (sum.examples.size() < 8) sum.examples.push_back(e);
      }
      std::string w = std::string(kAlgName[alg]) + " backward, form " + kForms[f].name + ", " +
                      std::to_string(used) + " dys";
      report(w.c_str(), sum);
    }
  std::printf("total %.0f s\n", now() - t0);
  return 0;
}

int run_sample() {
  Mx mx;
  std::mt19937_64 g(20240611);
  const int64_t kN = int64_t{1} << 22;
  Arr x(kN), y(kN), dy(kN), dx(kN);
  std::vector<float> ours(kN);
  Tally fwd_t[2][kNumForms], bwd_t[2][kNumForms];
  std::uniform_real_distribution<float> ux(-12.0f, 12.0f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int rep = 0; rep < 32; ++rep) {  // 16 x 2^22 random bit pairs, 16 x 2^22 "typical" pairs
    for (int64_t i = 0; i < kN; ++i) {
      if (rep < 16) {
        const uint64_t r = g();
        x.p[i] = f_of(static_cast<uint32_t>(r));
        dy.p[i] = f_of(static_cast<uint32_t>(r >> 32));
      } else {
        x.p[i] = ux(g);
        dy.p[i] = nd(g);
      }
    }
    for (int alg = 0; alg < 2; ++alg) {
      mx.fwd(alg, x, y);
      mx.bwd(alg, dy, y, x, dx);
      for (int f = 0; f < kNumForms; ++f) {
        kForms[f].fwd(alg, x.p, ours.data(), kN);
        compare(fwd_t[alg][f], ours.data(), y.p, x.p, nullptr, kN);
        kForms[f].bwd(alg, x.p, dy.p, ours.data(), kN);
        compare(bwd_t[alg][f], ours.data(), dx.p, x.p, dy.p, kN);
      }
    }
  }
  for (int alg = 0; alg < 2; ++alg)
    for (int f = 0; f < kNumForms; ++f) {
      std::string w = std::string("sample ") + kAlgName[alg] + " fwd, form " + kForms[f].name;
      report(w.c_str(), fwd_t[alg][f]);
      w = std::string("sample ") + kAlgName[alg] + " bwd (random pairs), form " + kForms[f].name;
      report(w.c_str(), bwd_t[alg][f]);
    }
  // Tails and shapes: small and odd sizes, 1-D to 5-D; ours is the scalar form.
  const std::vector<std::vector<uint32_t>> shapes = {
      {1}, {2}, {3}, {5}, {7}, {8}, {9}, {15}, {16}, {17}, {31}, {33}, {63}, {65}, {1023}, {2049}, {4097},
      {100003}, {3, 7}, {17, 3}, {2, 3, 7}, {5, 1, 13}, {2, 3, 5, 7}, {1, 1, 1, 17}, {2, 2, 3, 5, 7},
      {3, 1, 2, 1, 11}, {2, 1024, 3}, {7, 7, 7, 7}};
  Tally tail_f[2], tail_b[2];
  for (int rep = 0; rep < 20; ++rep)
    for (const auto& shape : shapes) {
      Arr a(shape), b(shape), c(shape), d(shape);
      for (int64_t i = 0; i < a.n; ++i) {
        const uint64_t r = g();
        a.p[i] = (r & 3) == 0 ? f_of(static_cast<uint32_t>(r >> 8)) : ux(g);
        c.p[i] = (r & 12) == 0 ? f_of(static_cast<uint32_t>(r >> 16)) : nd(g);
      }
      for (int alg = 0; alg < 2; ++alg) {
        mx.fwd(alg, a, b);
        mx.bwd(alg, c, b, a, d);
        odc_s_fwd(alg, a.p, ours.data(), a.n);
        compare(tail_f[alg], ours.data(), b.p, a.p, nullptr, a.n);
        odc_s_bwd(alg, a.p, c.p, ours.data(), a.n);
        compare(tail_b[alg], ours.data(), d.p, a.p, c.p, a.n);
      }
    }
  for (int alg = 0; alg < 2; ++alg) {
    std::string w = std::string("sizes/shapes ") + kAlgName[alg] + " fwd vs form s";
    report(w.c_str(), tail_f[alg]);
    w = std::string("sizes/shapes ") + kAlgName[alg] + " bwd vs form s";
    report(w.c_str(), tail_b[alg]);
  }
  return 0;
}

int run_time() {
  const int64_t kN = int64_t{1} << 20;
  const int kReps = 25;
  Mx mx;
  Arr x(kN), y(kN);
  std::vector<float> out(kN);
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-8.0f, 8.0f);
  for (int64_t i = 0; i < kN; ++i) x.p[i] = u(g);
  auto best_of = [&](auto&& fn) {
    double best = 1e9;
    for (int r = 0; r < kReps; ++r) {
      const double t = now();
      fn();
      best = std::min(best, now() - t);
    }
    return best / kN * 1e9;
  };
  for (int alg = 0; alg < 2; ++alg) {
    const double mxt = best_of([&] { mx.fwd(alg, x, y); });
    const double v8 = best_of([&] { odc_v8_fwd(alg, x.p, out.data(), kN); });
    const double v16 = best_of([&] { odc_v16_fwd(alg, x.p, out.data(), kN); });
    const double sc = best_of([&] { odc_s_fwd(alg, x.p, out.data(), kN); });
    std::printf("%-8s forward, ns per element: F8 (avx2+fma) %.3f  F16 (avx512f) %.3f  scalar %.3f  "
                "MXNet Activation %.3f\n", kAlgName[alg], v8, v16, sc, mxt);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "sample";
  if (mode == "all") return run_all();
  if (mode == "time") return run_time();
  return run_sample();
}
#endif
