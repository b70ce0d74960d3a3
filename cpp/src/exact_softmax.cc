#include "exact_softmax.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "executor.h"
#include "kernel_check.h"
#include "mxapi.h"
#include "mxparse.h"
#include "runtime.h"

namespace minpy {

namespace {

int softmax_width() {
  auto width = reinterpret_cast<int (*)()>(kernel_symbol("minpy_onednn_softmax_width"));
  return width ? width() : 0;
}

uint64_t next_bits(uint64_t* s) {
  *s = mix64(*s);
  return *s;
}

float uniform(uint64_t r, float half_width) {
  return (static_cast<float>(r >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f) * half_width;
}

// Rows of `cols` of six kinds in turn (logits of a few units, wide magnitudes, an infinity
// among them, a NaN or -inf among them, all equal, random bit patterns), and head gradients of
// wide magnitudes with the odd special value.
void make_draw(int64_t rows, int64_t cols, std::vector<float>* x, std::vector<float>* g) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  uint64_t s = 0x3c6ef372fe94f82bULL ^ static_cast<uint64_t>(cols);
  x->resize(static_cast<size_t>(rows * cols));
  g->resize(x->size());
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x->data() + r * cols;
    const int kind = static_cast<int>(r % 6);
    const float same = uniform(next_bits(&s), 50.0f);
    for (int64_t j = 0; j < cols; ++j) {
      const uint64_t b = next_bits(&s);
      switch (kind) {
        case 0: row[j] = uniform(b, 30.0f); break;
        case 1: row[j] = std::ldexp(uniform(b, 1.0f), static_cast<int>((b >> 8) % 60) - 30); break;
        case 4: row[j] = same; break;
        case 5: {
          const uint32_t bits = static_cast<uint32_t>(b);
          std::memcpy(&row[j], &bits, sizeof bits);
          break;
        }
        default: row[j] = uniform(b, 3.0f);
      }
    }
    const int64_t at = static_cast<int64_t>(next_bits(&s) % static_cast<uint64_t>(cols));
    if (kind == 2) row[at] = (r / 6) % 2 ? inf : -inf;
    if (kind == 3) row[at] = (r / 6) % 2 ? nan : -nan;
  }
  for (size_t k = 0; k < g->size(); ++k) {
    const uint64_t b = next_bits(&s);
    (*g)[k] = std::ldexp(uniform(b, 1.0f), static_cast<int>((b >> 8) % 40) - 20);
    if (k % 97 == 5) (*g)[k] = k % 2 ? -0.0f : inf;
  }
}

bool check_log_softmax(int64_t cols, int width, bool training) {
  AtomicSymbolCreator mxnet_op = nullptr, ours = nullptr;
  if (NNGetOpHandle("log_softmax", &mxnet_op) != 0 || !mxnet_op) return false;
  if (NNGetOpHandle("_minpy_log_softmax", &ours) != 0 || !ours) return false;
  const int64_t rows = std::max<int64_t>(96, ((int64_t(1) << 15) + cols - 1) / cols);
  std::vector<float> x, g;
  make_draw(rows, cols, &x, &g);
  AVal a;
  a.ndim = 2;
  a.dims[0] = rows;
  a.dims[1] = cols;
  AutogradState state(false, training);
  std::vector<float> want_y, want_dx, y, dx;
  const std::string w = std::to_string(width);
  if (!forward_backward(mxnet_op, {"axis"}, {"-1"}, a, x, g, training, &want_y, &want_dx)) return false;
  if (!forward_backward(ours, {"width"}, {w.c_str()}, a, x, g, training, &y, &dx)) return false;
  auto same = [](const std::vector<float>& p, const std::vector<float>& q) {
    return p.size() == q.size() && std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0;
  };
  return same(y, want_y) && same(dx, want_dx);
}

}  // namespace

bool log_softmax_kernel_exact(int64_t cols, bool training) {
  const int width = softmax_width();
  if ((width != 16 && width != 8) || cols < 1) return false;
  static std::mutex mu;
  static std::map<std::pair<int64_t, bool>, bool> known;
  const auto key = std::make_pair(cols, training);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known.find(key);
    if (it != known.end()) return it->second;
  }
  const bool exact = check_log_softmax(cols, width, training);  // not under the lock: it waits for MXNet
  std::lock_guard<std::mutex> lock(mu);
  known[key] = exact;
  return exact;
}

std::vector<Attr> log_softmax_kernel_attrs(const Trace& t, const Node& n) {
  if (n.op->name != "log_softmax" || n.in.size() != 1 || n.out.size() != 1 || !n.mutated.empty()) return {};
  const AVal& x = t.values[n.in[0]].aval;
  if (x.dtype != 0 || x.dev_type != 1 || x.ndim < 1 || x.ndim > 4 || x.size() == 0) return {};
  if (!(t.values[n.out[0]].aval == x)) return {};
  for (const Attr& a : n.attrs) {
    if (a.key == "axis") {
      const int axis = std::atoi(a.val.c_str());
      if (axis != -1 && axis != x.ndim - 1) return {};
    } else if (a.key == "use_length") {
      if (mx_bool(a.val)) return {};
    } else {
      return {};  // temperature (any value), dtype: MXNet's own kernel, not oneDNN's
    }
  }
  const int64_t cols = x.dims[x.ndim - 1];
  if (!log_softmax_kernel_exact(cols, t.training)) return {};
  return {{"width", std::to_string(softmax_width())}};
}

}  // namespace minpy
