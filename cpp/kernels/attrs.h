// Parsing helpers for the string attributes MXNet hands to library operators.
// Every helper throws std::runtime_error with a readable message; the op
// callbacks catch it and turn it into MX_ERROR_MSG + MX_FAIL.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace minpy_kernels {

using AttrMap = std::unordered_map<std::string, std::string>;

// The attributes a C entry point of the library gets as two arrays (a program's create call).
inline AttrMap attr_map(int num_attrs, const char* const* keys, const char* const* vals) {
  AttrMap attrs;
  for (int i = 0; i < num_attrs; ++i) attrs[keys[i]] = vals[i];
  return attrs;
}

inline const std::string& attr(const AttrMap& attrs, const std::string& key) {
  auto it = attrs.find(key);
  if (it == attrs.end()) throw std::runtime_error("missing attribute '" + key + "'");
  return it->second;
}

inline std::string attr_or(const AttrMap& attrs, const std::string& key, const std::string& dflt) {
  auto it = attrs.find(key);
  return it == attrs.end() ? dflt : it->second;
}

inline int64_t parse_int(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  while (end && (*end == ' ')) ++end;
  if (s.empty() || errno != 0 || end == s.c_str() || *end != '\0')
    throw std::runtime_error("not an integer: '" + s + "'");
  return v;
}

// strtof: a decimal string rounds straight to the nearest float, as MXNet's
// own float parameter parsing does (no double rounding through strtod).
inline float parse_float(const std::string& s) {
  const char* p = s.c_str();
  while (*p == ' ') ++p;
  char* end = nullptr;
  float v = std::strtof(p, &end);
  if (end == p) throw std::runtime_error("not a float: '" + s + "'");
  while (*end == ' ') ++end;
  if (*end != '\0') throw std::runtime_error("not a float: '" + s + "'");
  return v;
}

// Items of "(a, b, c)" / "[a,b]" / "a,b" / "(a,)" / "()"; empty items are dropped.
inline std::vector<std::string> split_tuple(const std::string& s) {
  std::string t = s;
  size_t b = t.find_first_not_of(" ");
  size_t e = t.find_last_not_of(" ");
  t = (b == std::string::npos) ? "" : t.substr(b, e - b + 1);
  if (!t.empty() && (t.front() == '(' || t.front() == '[')) {
    if (t.size() < 2 || (t.back() != ')' && t.back() != ']'))
      throw std::runtime_error("unbalanced tuple: '" + s + "'");
    t = t.substr(1, t.size() - 2);
  }
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= t.size()) {
    size_t comma = t.find(',', start);
    if (comma == std::string::npos) comma = t.size();
    std::string item = t.substr(start, comma - start);
    size_t ib = item.find_first_not_of(" ");
    if (ib != std::string::npos) {
      size_t ie = item.find_last_not_of(" ");
      items.push_back(item.substr(ib, ie - ib + 1));
    }
    start = comma + 1;
  }
  return items;
}

inline std::vector<int64_t> parse_int_tuple(const std::string& s) {
  std::vector<int64_t> v;
  for (const auto& item : split_tuple(s)) {
    // MXNet prints 64-bit dims as "128L" on some paths; accept the suffix.
    std::string it = item;
    if (!it.empty() && (it.back() == 'L' || it.back() == 'l')) it.pop_back();
    v.push_back(parse_int(it));
  }
  return v;
}

inline std::vector<float> parse_float_tuple(const std::string& s) {
  std::vector<float> v;
  for (const auto& item : split_tuple(s)) v.push_back(parse_float(item));
  return v;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

}  // namespace minpy_kernels
