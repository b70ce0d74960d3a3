// The symbol JSON MXNet reads and writes (MXSymbolCreateFromJSON, MXSymbolSaveToJSON): a string
// writer for the graphs we build (graph.cc, grad_graph.cc), and a small reader (objects, arrays,
// strings, numbers, true/false/null) to read a graph back after MXNet's gradient pass
// (grad_graph.cc); not a general-purpose parser (no \u escapes beyond ASCII).
#pragma once
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace minpy {

// `s` as a JSON string literal: quotes, backslashes and newlines escaped (op names, node names
// and attribute values are printable text otherwise).
inline void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
}

struct JValue {
  enum Kind { kNull, kBool, kNum, kStr, kArr, kObj } kind = kNull;
  double num = 0;
  std::string str;
  std::vector<JValue> arr;
  std::vector<std::pair<std::string, JValue>> obj;

  const JValue* get(const char* key) const {
    for (const auto& kv : obj)
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  int as_int() const { return static_cast<int>(num); }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}

  JValue parse() {
    JValue v = value();
    space();
    if (p_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  const std::string& s_;
  size_t p_ = 0;

  [[noreturn]] void fail(const char* what) {
    throw std::runtime_error(std::string("reading MXNet's graph JSON: ") + what + " at " + std::to_string(p_));
  }
  void space() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\t' || s_[p_] == '\r')) ++p_;
  }
  char peek() {
    space();
    if (p_ >= s_.size()) fail("unexpected end");
    return s_[p_];
  }
  void expect(char c) {
    if (peek() != c) fail("unexpected character");
    ++p_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (p_ < s_.size() && s_[p_] != '"') {
      char c = s_[p_++];
      if (c == '\\') {
        if (p_ >= s_.size()) fail("bad escape");
        char e = s_[p_++];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u': {
            if (p_ + 4 > s_.size()) fail("bad escape");
            out += static_cast<char>(std::strtol(s_.substr(p_, 4).c_str(), nullptr, 16));
            p_ += 4;
            break;
          }
          default: out += e;
        }
      } else {
        out += c;
      }
    }
    if (p_ >= s_.size()) fail("unterminated string");
    ++p_;
    return out;
  }
  JValue value() {
    JValue v;
    char c = peek();
    if (c == '{') {
      v.kind = JValue::kObj;
      ++p_;
      if (peek() == '}') {
        ++p_;
        return v;
      }
      for (;;) {
        std::string key = string();
        expect(':');
        v.obj.emplace_back(std::move(key), value());
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = JValue::kArr;
      ++p_;
      if (peek() == ']') {
        ++p_;
        return v;
      }
      for (;;) {
        v.arr.push_back(value());
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = JValue::kStr;
      v.str = string();
      return v;
    }
    if (s_.compare(p_, 4, "true") == 0 || s_.compare(p_, 5, "false") == 0) {
      v.kind = JValue::kBool;
      v.num = s_[p_] == 't';
      p_ += s_[p_] == 't' ? 4 : 5;
      return v;
    }
    if (s_.compare(p_, 4, "null") == 0) {
      p_ += 4;
      return v;
    }
    char* end = nullptr;
    v.kind = JValue::kNum;
    v.num = std::strtod(s_.c_str() + p_, &end);
    if (end == s_.c_str() + p_) fail("not a value");
    p_ = static_cast<size_t>(end - s_.c_str());
    return v;
  }
};

inline JValue parse_json(const std::string& s) { return JsonReader(s).parse(); }

}  // namespace minpy
