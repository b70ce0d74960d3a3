#include "rewrite.h"

#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "mxparse.h"

namespace minpy {

namespace {

struct ScalarForm {
  const char* broadcast_op;
  bool scalar_first;      // S op x (the r* forms)
  bool commutes = false;  // x * s, x + s: lifted as S op x too, which keeps x's NaN where x and s
                          // are both NaN, as the scalar op does (MXNet's broadcast ops and our
                          // kernels give the second operand's; tests/test_special_values.py)
  bool np = false;        // mx.np's: lifted only on float arrays (on integers the scalar op's result
                          // is a float array, the broadcast op's an integer one)
};

const std::unordered_map<std::string, ScalarForm>& scalar_ops() {
  static const std::unordered_map<std::string, ScalarForm> m = {
      {"_mul_scalar", {"broadcast_mul", false, true}},        {"_plus_scalar", {"broadcast_add", false, true}},
      {"_minus_scalar", {"broadcast_sub", false}},      {"_rminus_scalar", {"broadcast_sub", true}},
      {"_div_scalar", {"broadcast_div", false}},        {"_rdiv_scalar", {"broadcast_div", true}},
      {"_power_scalar", {"broadcast_power", false}},    {"_rpower_scalar", {"broadcast_power", true}},
      {"_maximum_scalar", {"broadcast_maximum", false}}, {"_minimum_scalar", {"broadcast_minimum", false}},
      {"_mod_scalar", {"broadcast_mod", false}},        {"_rmod_scalar", {"broadcast_mod", true}},
      {"_hypot_scalar", {"broadcast_hypot", false}},    {"_equal_scalar", {"broadcast_equal", false}},
      {"_not_equal_scalar", {"broadcast_not_equal", false}}, {"_greater_scalar", {"broadcast_greater", false}},
      {"_greater_equal_scalar", {"broadcast_greater_equal", false}},
      {"_lesser_scalar", {"broadcast_lesser", false}},  {"_lesser_equal_scalar", {"broadcast_lesser_equal", false}},
      {"_npi_multiply_scalar", {"_npi_multiply", false, true, true}},
      {"_npi_add_scalar", {"_npi_add", false, true, true}},
      {"_npi_subtract_scalar", {"_npi_subtract", false, false, true}},
      {"_npi_rsubtract_scalar", {"_npi_subtract", true, false, true}},
      {"_npi_true_divide_scalar", {"_npi_true_divide", false, false, true}},
      {"_npi_rtrue_divide_scalar", {"_npi_true_divide", true, false, true}},
  };
  return m;
}

// Numbers as MXNet reads them from an op's attributes (mxparse.h): the optimizers' float fields
// (lr, wd, momentum, beta1 ...) with dmlc's parser in float, the *_scalar ops' double scalar with
// it in double, Tuple<float> items (lrs, wds) with strtof. Kernels widen floats to the weights'
// type, so every value is returned as the double the kernel computes with.
double float_field(const std::vector<Attr>& attrs, const char* key, float dflt) {
  std::string s = attr_value(attrs, key, "");
  return s.empty() ? dflt : mx_float_field(s);
}

double scalar_field(const std::vector<Attr>& attrs) { return dmlc_parse<double>(attr_value(attrs, "scalar", kScalarDefault)); }

// "(0.1, 0.2)" or "[0.1, 0.2]" -> {0.1f, 0.2f}
std::vector<double> float_tuple(const std::string& s) {
  return mx_tuple<double>(s, [](const char* p, char** end) { return std::strtof(p, end); });
}

// Thrown when no literal reads back as the value (mxparse.h): the expansion is abandoned and
// the op is recorded as it is.
struct NoLiteral {};

template <typename T>
std::string literal(T v) {
  std::string s = mx_literal(v);
  if (s.empty()) throw NoLiteral{};
  return s;
}

// op(x, s): s is written so that MXNet reads back exactly the double s.
int scal(Emitter& em, const char* op, int x, double s) { return em.node(op, {{"scalar", literal(s)}}, {x}); }

// clip's bounds are float fields.
int clip(Emitter& em, int x, double c) {
  return em.node("clip", {{"a_min", literal(static_cast<float>(-c))}, {"a_max", literal(static_cast<float>(c))}}, {x});
}

// (1 - lr*wd)*w - lr*clip(rescale*g)            [SGDKernel]
int sgd(Emitter& em, int w, int g, int LR, double wd, double rescale, double clip_g) {
  int step;
  if (clip_g >= 0) step = em.node("broadcast_mul", {}, {LR, clip(em, scal(em, "_mul_scalar", g, rescale), clip_g)});
  else step = em.node("broadcast_mul", {}, {g, scal(em, "_mul_scalar", LR, rescale)});
  int decay = scal(em, "_rminus_scalar", scal(em, "_mul_scalar", LR, wd), 1.0);
  return em.node("broadcast_sub", {}, {em.node("broadcast_mul", {}, {w, decay}), step});
}

// w + ((0 - (lr*wd)*w) - lr*clip(rescale*g))    [MultiSGDKernel without momentum: its
// momentum is 0, and its result rounds differently from SGDKernel's whenever wd != 0]
int multi_sgd(Emitter& em, int w, int g, int LR, double wd, double rescale, double clip_g) {
  int decay = em.node("broadcast_mul", {}, {w, scal(em, "_mul_scalar", LR, wd)});
  int step;
  if (clip_g >= 0) step = em.node("broadcast_mul", {}, {LR, clip(em, scal(em, "_mul_scalar", g, rescale), clip_g)});
  else step = em.node("broadcast_mul", {}, {g, scal(em, "_mul_scalar", LR, rescale)});
  int mom = em.node("elemwise_sub", {}, {scal(em, "_rminus_scalar", decay, 0.0), step});
  return em.node("elemwise_add", {}, {w, mom});
}

// mom = momentum*mom - lr*wd*w - lr*clip(rescale*g); w += mom     [SGDMomKernel]
std::pair<int, int> sgd_mom(Emitter& em, int w, int g, int mom, int LR, double momentum, double wd, double rescale,
                            double clip_g) {
  int a = scal(em, "_mul_scalar", mom, momentum);
  int b = em.node("broadcast_mul", {}, {w, scal(em, "_mul_scalar", LR, wd)});
  int c;
  if (clip_g >= 0) c = em.node("broadcast_mul", {}, {LR, clip(em, scal(em, "_mul_scalar", g, rescale), clip_g)});
  else c = em.node("broadcast_mul", {}, {g, scal(em, "_mul_scalar", LR, rescale)});
  int new_mom = em.node("elemwise_sub", {}, {em.node("elemwise_sub", {}, {a, b}), c});
  return {em.node("elemwise_add", {}, {w, new_mom}), new_mom};
}

}  // namespace

const char* liftable_attr(const std::string& op) {
  if (scalar_ops().count(op)) return "scalar";
  static const std::unordered_map<std::string, const char*> updates = {
      {"sgd_update", "lr"}, {"sgd_mom_update", "lr"}, {"adam_update", "lr"}, {"nag_mom_update", "lr"},
      {"rmsprop_update", "lr"}, {"rmspropalex_update", "lr"}, {"mp_sgd_update", "lr"},
      {"mp_sgd_mom_update", "lr"}, {"mp_nag_mom_update", "lr"}, {"multi_sgd_update", "lrs"},
      {"multi_sgd_mom_update", "lrs"}, {"multi_mp_sgd_update", "lrs"}, {"multi_mp_sgd_mom_update", "lrs"},
      {"_minpy_multi_adagrad_update", "lrs"},
      // our kernels as minpy_jit/trainer.py records them: lifted when the rates change
      {"_minpy_multi_sgd_update", "lrs"}, {"_minpy_multi_sgd_mom_update", "lrs"},
      {"_minpy_multi_nag_mom_update", "lrs"}, {"_minpy_multi_adam_update", "lrs"},
      {"_minpy_multi_rmsprop_update", "lrs"}, {"_minpy_multi_rmspropalex_update", "lrs"},
      {"_minpy_multi_mp_sgd_update", "lrs"}, {"_minpy_multi_mp_sgd_mom_update", "lrs"},
      {"_minpy_multi_mp_nag_mom_update", "lrs"}};
  auto it = updates.find(op);
  return it == updates.end() ? "" : it->second;
}

static bool expand_lifted_or_throw(const std::string& op, const std::vector<Attr>& attrs, const std::vector<int>& in,
                                   Emitter& em, std::vector<int>* outs, std::vector<std::pair<int, int>>* updates) {
  auto so = scalar_ops().find(op);
  if (so != scalar_ops().end()) {
    if (in.size() != 1) return false;
    if (so->second.np && (!attr_value(attrs, "is_int", "").empty() || (em.dtype(in[0]) != 0 && em.dtype(in[0]) != 1)))
      return false;  // float32 and float64 only; is_int (never passed by mx.np) keeps the attribute
    int S = em.constant(scalar_field(attrs), in[0]);
    if (S < 0) return false;
    const bool s_first = so->second.scalar_first || so->second.commutes;
    std::vector<int> args = s_first ? std::vector<int>{S, in[0]} : std::vector<int>{in[0], S};
    outs->push_back(em.node(so->second.broadcast_op, {}, args));
    return true;
  }
  double wd = float_field(attrs, "wd", 0), rescale = float_field(attrs, "rescale_grad", 1),
         clip_g = float_field(attrs, "clip_gradient", -1);
  if (op == "sgd_update" && in.size() == 2) {
    int LR = em.constant(float_field(attrs, "lr", 0), in[0]);
    if (LR < 0) return false;
    outs->push_back(sgd(em, in[0], in[1], LR, wd, rescale, clip_g));
    return true;
  }
  if (op == "sgd_mom_update" && in.size() == 3) {
    int LR = em.constant(float_field(attrs, "lr", 0), in[0]);
    if (LR < 0) return false;
    auto r = sgd_mom(em, in[0], in[1], in[2], LR, float_field(attrs, "momentum", 0), wd, rescale, clip_g);
    outs->push_back(r.first);
    updates->emplace_back(2, r.second);
    return true;
  }
  if (op == "adam_update" && in.size() == 4) {
    int LR = em.constant(float_field(attrs, "lr", 0), in[0]);
    if (LR < 0) return false;
    double b1 = float_field(attrs, "beta1", 0.9f), b2 = float_field(attrs, "beta2", 0.999f),
           eps = float_field(attrs, "epsilon", 1e-8f);
    int w = in[0], g = in[1], mean = in[2], var = in[3];
    // g' = rescale*g + wd*w, clipped; mean, var moving averages; w -= lr*mean/(sqrt(var)+eps)   [AdamUpdateKernel]
    int gr = em.node("elemwise_add", {}, {scal(em, "_mul_scalar", g, rescale), scal(em, "_mul_scalar", w, wd)});
    if (clip_g >= 0) gr = clip(em, gr, clip_g);
    const double one_b1 = 1.0 - b1, one_b2 = 1.0 - b2;  // the kernel's (1.f - beta1): exact in double
    int m = em.node("elemwise_add", {}, {scal(em, "_mul_scalar", mean, b1), scal(em, "_mul_scalar", gr, one_b1)});
    int v = em.node("elemwise_add",
                    {}, {scal(em, "_mul_scalar", var, b2), em.node("elemwise_mul", {}, {scal(em, "_mul_scalar", gr, one_b2), gr})});
    int upd = em.node("broadcast_div", {}, {em.node("broadcast_mul", {}, {m, LR}),
                                            scal(em, "_plus_scalar", em.node("sqrt", {}, {v}), eps)});
    outs->push_back(em.node("elemwise_sub", {}, {w, upd}));
    updates->emplace_back(2, m);
    updates->emplace_back(3, v);
    return true;
  }
  if (op == "multi_sgd_update" || op == "multi_sgd_mom_update") {
    bool mom = op == "multi_sgd_mom_update";
    size_t stride = mom ? 3 : 2;
    std::vector<double> lrs = float_tuple(attr_value(attrs, "lrs", ""));
    std::vector<double> wds = float_tuple(attr_value(attrs, "wds", ""));
    size_t n = in.size() / stride;
    if (lrs.size() != n || wds.size() != n || in.size() % stride) return false;
    std::vector<int> LRs;  // all constants first: a failure must not leave half an expansion behind
    for (size_t i = 0; i < n; ++i) {
      LRs.push_back(em.constant(lrs[i], in[i * stride]));
      if (LRs.back() < 0) return false;
    }
    for (size_t i = 0; i < n; ++i) {
      int LR = LRs[i];
      if (mom) {
        auto r = sgd_mom(em, in[i * 3], in[i * 3 + 1], in[i * 3 + 2], LR, float_field(attrs, "momentum", 0), wds[i],
                         rescale, clip_g);
        outs->push_back(r.first);
        updates->emplace_back(static_cast<int>(i * 3 + 2), r.second);
      } else {
        outs->push_back(multi_sgd(em, in[i * 2], in[i * 2 + 1], LR, wds[i], rescale, clip_g));
      }
    }
    return true;
  }
  return false;
}

bool needs_expansion(const std::string& op) { return op == "multi_sgd_update" || op == "multi_sgd_mom_update"; }

static bool expand_native_or_throw(const std::string& op, const std::vector<Attr>& attrs, const std::vector<int>& in,
                                   Emitter& em, std::vector<int>* outs) {
  if (!needs_expansion(op)) return false;
  bool mom = op == "multi_sgd_mom_update";
  size_t stride = mom ? 3 : 2;
  std::vector<double> lrs = float_tuple(attr_value(attrs, "lrs", ""));
  std::vector<double> wds = float_tuple(attr_value(attrs, "wds", ""));
  size_t n = in.size() / stride;
  if (lrs.size() != n || wds.size() != n || in.size() % stride) return false;
  if (!mom) {  // MultiSGDKernel's own arithmetic (not sgd_update's), with each lr as a constant
    std::vector<int> LRs;
    for (size_t i = 0; i < n; ++i) {
      // lrs are float32 parameters of the kernel, widened to the weights' type
      LRs.push_back(em.constant(lrs[i], in[i * 2]));
      if (LRs.back() < 0) return false;  // float16: MXNet runs the op (its kernel rounds in half)
    }
    for (size_t i = 0; i < n; ++i)
      outs->push_back(multi_sgd(em, in[i * 2], in[i * 2 + 1], LRs[i], wds[i], float_field(attrs, "rescale_grad", 1),
                                float_field(attrs, "clip_gradient", -1)));
    return true;
  }
  for (size_t i = 0; i < n; ++i) {
    // The attribute strings are those the multi op's kernel parses (float32 params), one weight each.
    std::vector<Attr> a = {{"lr", literal(static_cast<float>(lrs[i]))},
                           {"wd", literal(static_cast<float>(wds[i]))},
                           {"rescale_grad", attr_value(attrs, "rescale_grad", "1")},
                           {"clip_gradient", attr_value(attrs, "clip_gradient", "-1")}};
    if (mom) a.push_back({"momentum", attr_value(attrs, "momentum", "0")});
    std::vector<int> args(in.begin() + i * stride, in.begin() + (i + 1) * stride);
    outs->push_back(em.node(mom ? "sgd_mom_update" : "sgd_update", a, args));
  }
  return true;
}

// A value no literal can carry abandons the expansion (the nodes already emitted are dead: no
// output refers to them, so the graph builder drops them) and the op is recorded as it is.
bool expand_lifted(const std::string& op, const std::vector<Attr>& attrs, const std::vector<int>& in, Emitter& em,
                   std::vector<int>* outs, std::vector<std::pair<int, int>>* updates) {
  try {
    return expand_lifted_or_throw(op, attrs, in, em, outs, updates);
  } catch (const NoLiteral&) {
    return false;
  }
}

bool expand_native(const std::string& op, const std::vector<Attr>& attrs, const std::vector<int>& in, Emitter& em,
                   std::vector<int>* outs, std::vector<std::pair<int, int>>*) {
  try {
    return expand_native_or_throw(op, attrs, in, em, outs);
  } catch (const NoLiteral&) {
    return false;
  }
}

}  // namespace minpy
