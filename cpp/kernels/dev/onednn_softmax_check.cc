// Developer check (not part of the library): onednn_softmax.h against MXNet 1.9.1's
// nd.log_softmax(x, axis=-1) forward and backward, on the inputs and outputs that
// onednn_softmax_check.py recorded from MXNet (one directory per oneDNN ISA path).
// From the repo root (the driver takes about 15 s per path on this machine):
//   .venv/bin/python cpp/kernels/dev/onednn_softmax_check.py /tmp/lsm_default
//   DNNL_MAX_CPU_ISA=AVX2 .venv/bin/python cpp/kernels/dev/onednn_softmax_check.py /tmp/lsm_avx2
//   g++ -O3 -ffp-contract=off -fno-math-errno -fno-trapping-math -std=c++17 -Icpp/kernels -Icpp/kernels/dev
//       cpp/kernels/dev/onednn_softmax_check.cc -o /tmp/onednn_softmax_check   (one line)
//   /tmp/onednn_softmax_check /tmp/lsm_default 16 /tmp/lsm_avx2 8
// and the exp/log sweep (--sweep, see the .py; about 190 MB a directory):
//   .venv/bin/python cpp/kernels/dev/onednn_softmax_check.py /tmp/lsm_sweep_default --sweep
//   DNNL_MAX_CPU_ISA=AVX2 .venv/bin/python cpp/kernels/dev/onednn_softmax_check.py /tmp/lsm_sweep_avx2 --sweep
//   /tmp/onednn_softmax_check /tmp/lsm_sweep_default 16 /tmp/lsm_sweep_avx2 8
// Result on this machine (AVX-512; the AVX2 path through DNNL_MAX_CPU_ISA=AVX2): 0 elements
// differ in every column, 5,700,960 elements per path in the random sets and 9,437,184 in each
// sweep (details in onednn_softmax.h's top comment).
// Arguments: pairs of (directory, vector width to model it with). For each shape it prints the
// oneDNN implementations MXNet ran (from DNNL_VERBOSE) and the number of elements whose bits
// differ from MXNet's, for: fwd (our forward of x against MXNet's y), bwd (our backward from
// MXNet's dy and y against MXNet's dx), chain (our forward then our backward against MXNet's dx),
// inf (MXNet's forward outside autograd, forward_inference, against its training forward).
// "nan-bits" counts elements where both are NaN but the NaN bit patterns differ (also counted
// in the mismatches). It also reports the width onednn_softmax_vector_width() picks in this
// process (run it under the same DNNL_MAX_CPU_ISA as the driver to compare). Exit status 1 if
// any element differs.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../onednn_softmax.h"

using namespace minpy_kernels;

struct Count {
  int64_t diff = 0, nan_bits = 0, total = 0;
  int64_t first = -1;
};

static void compare(const float* ours, const float* ref, int64_t n, Count* c) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t a, b;
    std::memcpy(&a, ours + i, 4);
    std::memcpy(&b, ref + i, 4);
    ++c->total;
    if (a != b) {
      ++c->diff;
      if (ours[i] != ours[i] && ref[i] != ref[i]) ++c->nan_bits;
      if (c->first < 0) c->first = i;
    }
  }
}

int main(int argc, char** argv) {
  if (argc < 3 || (argc - 1) % 2) {
    std::fprintf(stderr, "usage: %s DIR WIDTH [DIR WIDTH ...]\n", argv[0]);
    return 2;
  }
  std::printf("onednn_softmax_vector_width() here: %d\n", onednn_softmax_vector_width());
  bool all_ok = true;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string dir = argv[a];
    const int width = std::atoi(argv[a + 1]);
    std::ifstream idx(dir + "/index.txt");
    if (!idx) {
      std::fprintf(stderr, "no %s/index.txt\n", dir.c_str());
      return 2;
    }
    std::printf("== %s, modelled with width %d\n", dir.c_str(), width);
    std::printf("%-10s %6s %-22s %-22s %12s %12s %12s %12s\n", "shape", "trials", "mxnet fwd", "mxnet bwd",
                "fwd diff", "bwd diff", "chain diff", "inf diff");
    Count sum_f, sum_b, sum_c;
    std::string line;
    while (std::getline(idx, line)) {
      std::istringstream ls(line);
      std::string name, fimpl, bimpl;
      int64_t rows, cols, trials;
      ls >> name >> rows >> cols >> trials >> fimpl >> bimpl;
      const int64_t n = rows * cols * trials;
      std::vector<float> x(n), dy(n), y(n), dx(n), yi(n), oy(n), odx(n), ocdx(n);
      std::ifstream f(dir + "/" + name + ".bin", std::ios::binary);
      for (auto* v : {&x, &dy, &y, &dx, &yi}) f.read(reinterpret_cast<char*>(v->data()), n * 4);
      if (!f) {
        std::fprintf(stderr, "short file %s\n", name.c_str());
        return 2;
      }
      const int64_t all_rows = rows * trials;
      log_softmax_rows_forward(x.data(), oy.data(), all_rows, cols, width);
      log_softmax_rows_backward(dy.data(), y.data(), odx.data(), all_rows, cols, width);
      log_softmax_rows_backward(dy.data(), oy.data(), ocdx.data(), all_rows, cols, width);
      Count cf, cb, cc, ci;
      compare(oy.data(), y.data(), n, &cf);
      compare(odx.data(), dx.data(), n, &cb);
      compare(ocdx.data(), dx.data(), n, &cc);
      compare(yi.data(), y.data(), n, &ci);
      auto cell = [](const Count& c) {
        static char buf[4][64];
        static int k = 0;
        char* b = buf[k++ % 4];
        if (c.nan_bits) std::snprintf(b, 64, "%lld(nan-bits %lld)", (long long)c.diff, (long long)c.nan_bits);
        else std::snprintf(b, 64, "%lld", (long long)c.diff);
        return b;
      };
      std::printf("%-10s %6lld %-22s %-22s %12s %12s %12s %12s   of %lld\n", name.c_str(), (long long)trials,
                  fimpl.c_str(), bimpl.c_str(), cell(cf), cell(cb), cell(cc), cell(ci), (long long)n);
      for (const auto* c : {&cf, &cb}) {
        if (c->first >= 0) {
          const bool fwd = c == &cf;
          const int64_t i = c->first;
          const int64_t row = i / cols;
          std::printf("   first %s diff at row %lld col %lld: ours %a mxnet %a (x %a dy %a y %a)\n", fwd ? "fwd" : "bwd",
                      (long long)row, (long long)(i % cols), fwd ? oy[i] : odx[i], fwd ? y[i] : dx[i], x[i], dy[i],
                      y[i]);
        }
      }
      sum_f.diff += cf.diff; sum_f.total += cf.total;
      sum_b.diff += cb.diff; sum_b.total += cb.total;
      sum_c.diff += cc.diff; sum_c.total += cc.total;
      if (cf.diff || cb.diff || cc.diff || ci.diff) all_ok = false;
    }
    std::printf("total: fwd %lld, bwd %lld, chain %lld elements differ of %lld\n", (long long)sum_f.diff,
                (long long)sum_b.diff, (long long)sum_c.diff, (long long)sum_f.total);
  }
  return all_ok ? 0 : 1;
}
