// How MXNet 1.9.1 turns attribute strings into numbers -- three ways, and they differ:
//
//   float fields of an op's parameters (sgd_update's lr, adam_update's beta1, clip's
//   a_min ...) go through dmlc-core's own decimal parser, which is not correctly rounded:
//   digits after the point are read into an integer and divided in double, a mantissa
//   and an exponent are combined in float. For 11% of Python reprs of random learning
//   rates it gives another float than strtof (measured: 328 of 3000).
//   Tuple<float> items (multi_sgd_update's lrs and wds) go through std::istream: strtof,
//   correctly rounded.
//   double fields (the scalar of _mul_scalar and friends) through dmlc's parser in double,
//   then the kernel casts to float.
//
// Our kernels must compute with the very float MXNet would, so the runtime converts each
// attribute the way MXNet parses it for the op it replaces, and hands our kernels the
// result as an exact float32 literal (exact_float).
#pragma once
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace minpy {

// dmlc::ParseFloat<T> (dmlc-core strtonum.h) re-implemented from its definition: sign,
// integer digits, up to 19 fraction digits as an integer over a power of ten (in double),
// an exponent applied by repeated float multiplication. inf/nan as words.
template <typename T>
T dmlc_parse(const std::string& str) {
  const char* p = str.c_str();
  while (std::isspace(static_cast<unsigned char>(*p))) ++p;
  bool positive = true;
  if (*p == '-') positive = false, ++p;
  else if (*p == '+') ++p;
  auto word = [&](const char* w) {
    size_t i = 0;
    while (w[i] && (p[i] | 32) == w[i]) ++i;
    return w[i] == 0 ? i : 0;
  };
  if (size_t n = word("infinity") ? 8 : word("inf") ? 3 : 0) {
    (void)n;
    return positive ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
  }
  if (word("nan")) return std::numeric_limits<T>::quiet_NaN();
  uint64_t whole = 0;
  for (; std::isdigit(static_cast<unsigned char>(*p)); ++p) whole = whole * 10 + static_cast<uint64_t>(*p - '0');
  T value = static_cast<T>(whole);
  if (*p == '.') {
    ++p;
    uint64_t digits = 0, scale = 1;
    for (int count = 0; std::isdigit(static_cast<unsigned char>(*p)); ++p, ++count) {
      if (count < 19) digits = digits * 10 + static_cast<uint64_t>(*p - '0'), scale *= 10;
    }
    value += static_cast<T>(static_cast<double>(digits) / static_cast<double>(scale));
  }
  if (*p == 'e' || *p == 'E') {
    ++p;
    bool negative_exp = false;
    if (*p == '-') negative_exp = true, ++p;
    else if (*p == '+') ++p;
    unsigned e = 0;
    for (; std::isdigit(static_cast<unsigned char>(*p)); ++p) e = e * 10 + static_cast<unsigned>(*p - '0');
    const unsigned max_exp = sizeof(T) == sizeof(double) ? 308u : 38u;
    if (e > max_exp) e = max_exp;  // out of range: clipped, as MXNet's float fields do
    const T max_mant = static_cast<T>(sizeof(T) == sizeof(double) ? 1.79769313486231570 : 3.402823466);
    const T min_mant = static_cast<T>(sizeof(T) == sizeof(double) ? 2.22507385850720139 : 1.175494351);
    if (e == max_exp && ((!negative_exp && value > max_mant) || (negative_exp && value < min_mant)))
      value = negative_exp ? min_mant : max_mant;
    T factor = static_cast<T>(1.0f);
    for (; e >= 8u; e -= 8u) factor *= static_cast<T>(1E8f);
    for (; e > 0u; --e) factor *= static_cast<T>(10.0f);
    value = negative_exp ? value / factor : value * factor;
  }
  return positive ? value : -value;
}

// A float field of an MXNet op parameter (lr, wd, momentum, rescale_grad, beta1 ...).
inline float mx_float_field(const std::string& s) { return dmlc_parse<float>(s); }

// A double field (the scalar of *_scalar ops), as the float32 kernel uses it.
inline float mx_scalar_as_float(const std::string& s) { return static_cast<float>(dmlc_parse<double>(s)); }

// A bool field ("True", "true" or "1").
inline bool mx_bool(const std::string& s) { return s == "True" || s == "true" || s == "1"; }

// The numbers of a tuple attribute ("(2, 3)", "[0,-1]", "4"), each read by `item` (strtoll,
// strtof ...); empty for "None" or "()".
template <typename T, typename Read>
std::vector<T> mx_tuple(const std::string& s, Read item) {
  std::vector<T> out;
  const char* p = s.c_str();
  while (*p) {
    if ((*p >= '0' && *p <= '9') || *p == '-' || *p == '.') {
      char* end = nullptr;
      out.push_back(static_cast<T>(item(p, &end)));
      if (end == p) break;
      p = end;
    } else {
      ++p;
    }
  }
  return out;
}

// An item of a Tuple<float> attribute (multi_sgd_update's lrs, wds).
inline float mx_tuple_item(const std::string& s) { return std::strtof(s.c_str(), nullptr); }

// The power of ten dmlc's parser scales by for an exponent of e (its own product of 1e8 and 10).
template <typename T>
T dmlc_power_of_ten(unsigned e) {
  T factor = static_cast<T>(1.0f);
  for (; e >= 8u; e -= 8u) factor *= static_cast<T>(1E8f);
  for (; e > 0u; --e) factor *= static_cast<T>(10.0f);
  return factor;
}

template <typename T>
bool dmlc_reads_as(const std::string& s, T v) {
  const T r = dmlc_parse<T>(s);
  return std::memcmp(&r, &v, sizeof(T)) == 0;
}

// A literal that dmlc's parser reads back as exactly v in type T (a double field such as
// _mul_scalar's scalar, or a float field such as clip's a_min), or "" if none was found.
// "%.17g" is not enough: 28% of random doubles come back another double (1 - 0.9f, written
// "0.10000002384185791", reads as ...792: the 17 digits are rounded to 53 bits before the
// division). So: the shortest "%.Ng" that reads back, else a value X near v * 10^e with
// X written plainly and "e-<e>" appended (dmlc reads X, then divides by its own 10^e), or
// v / 10^e with "e+<e>". Checked against dmlc-core's own parser on 2,000,000 random values
// (1e-40 to 1e40): none wrong, every double found; floats below 5e-35 may find none, and
// callers then keep MXNet's own op.
template <typename T>
std::string dmlc_literal(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int digits = std::numeric_limits<T>::max_digits10; digits <= 21; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
    if (dmlc_reads_as(buf, v)) return buf;
  }
  const char* sign = std::signbit(v) ? "-" : "";
  const long double a = std::fabs(static_cast<long double>(v));
  const unsigned max_exp = sizeof(T) == sizeof(double) ? 307u : 37u;  // below dmlc's clipping edge
  for (unsigned e = 1; e <= max_exp; ++e) {
    const T factor = dmlc_power_of_ten<T>(e);
    for (bool negative_exp : {true, false}) {
      const long double x0 = negative_exp ? a * factor : a / factor;
      if (x0 < 1.0L || x0 >= 1.8e19L) continue;  // its integer part must fit dmlc's uint64 reader
      T x = static_cast<T>(x0);
      for (int i = 0; i < 3; ++i) x = std::nextafter(x, static_cast<T>(0));
      for (int i = 0; i < 7; ++i, x = std::nextafter(x, std::numeric_limits<T>::infinity())) {
        for (int digits = std::numeric_limits<T>::max_digits10; digits <= 21; ++digits) {
          int len = std::snprintf(buf, sizeof buf, "%s%.*g", sign, digits, static_cast<double>(x));
          if (std::strchr(buf, 'e')) continue;
          std::snprintf(buf + len, sizeof buf - len, "e%c%u", negative_exp ? '-' : '+', e);
          if (dmlc_reads_as(buf, v)) return buf;
        }
      }
    }
  }
  return "";
}

// dmlc_literal, remembered: the rewrites write the same few hyper-parameters on every step.
template <typename T>
std::string mx_literal(T v) {
  if (!std::isfinite(v) || v == 0) return dmlc_literal(v);  // 0 and -0 would share a key
  thread_local std::unordered_map<T, std::string> memo;
  auto it = memo.find(v);
  if (it != memo.end()) return it->second;
  if (memo.size() > 4096) memo.clear();
  return memo[v] = dmlc_literal(v);
}

// A float32 value as a literal that strtof reads back exactly.
inline std::string exact_float(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace minpy
