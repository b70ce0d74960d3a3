// The abstract value: what is known about an array without its data.
// Shape, dtype and context; the central noun of the recorder and the cache key.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace minpy {

// MXNet's device types (Context::DeviceType).
enum DevType { kCPU = 1, kGPU = 2, kCPUPinned = 3, kCPUShared = 5 };

// Host memory our CPU kernels may read and write: cpu, cpu_pinned and cpu_shared.
inline bool in_cpu_memory(int dev_type) { return dev_type == kCPU || dev_type == kCPUPinned || dev_type == kCPUShared; }

struct AVal {
  static constexpr int kMaxDim = 8;
  int ndim = 0;
  int64_t dims[kMaxDim] = {0};
  int dtype = 0;     // mshadow type flag: 0 f32, 1 f64, 2 f16, 3 u8, 4 i32, 5 i8, 6 i64, 7 bool
  int dev_type = 1;  // 1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared
  int dev_id = 0;

  bool operator==(const AVal& o) const {
    if (ndim != o.ndim || dtype != o.dtype || dev_type != o.dev_type || dev_id != o.dev_id) return false;
    for (int i = 0; i < ndim; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
  bool operator!=(const AVal& o) const { return !(*this == o); }

  int64_t size() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= dims[i];
    return n;
  }

  std::string shape_str() const {
    std::string s = "(";
    for (int i = 0; i < ndim; ++i) {
      if (i) s += ", ";
      s += std::to_string(dims[i]);
    }
    if (ndim == 1) s += ",";
    return s + ")";
  }
};

inline const char* dtype_name(int flag) {
  switch (flag) {
    case 0: return "float32";
    case 1: return "float64";
    case 2: return "float16";
    case 3: return "uint8";
    case 4: return "int32";
    case 5: return "int8";
    case 6: return "int64";
    case 7: return "bool";
    default: return "dtype?";
  }
}

inline size_t dtype_bytes(int flag) {
  switch (flag) {
    case 1: case 6: return 8;
    case 2: return 2;
    case 3: case 5: case 7: return 1;
    default: return 4;
  }
}

inline std::string ctx_str(int dev_type, int dev_id) {
  const char* t = dev_type == 2 ? "gpu" : dev_type == 3 ? "cpu_pinned" : dev_type == 5 ? "cpu_shared" : "cpu";
  return std::string(t) + "(" + std::to_string(dev_id) + ")";
}

// 64-bit mixing used by every hash in the runtime (splitmix64 finaliser).
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t hash_bytes(const void* data, size_t n, uint64_t seed = 0xcbf29ce484222325ULL) {
  // FNV-1a over the bytes, finished with mix64 for avalanche.
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return mix64(h);
}

inline uint64_t hash_aval(const AVal& a) {
  uint64_t h = mix64(static_cast<uint64_t>(a.ndim) * 31 + a.dtype);
  for (int i = 0; i < a.ndim; ++i) h = mix64(h ^ static_cast<uint64_t>(a.dims[i]));
  return mix64(h ^ (static_cast<uint64_t>(a.dev_type) << 32 | static_cast<uint32_t>(a.dev_id)));
}

// Two independent 64-bit lanes: a 128-bit key makes a wrong cache hit practically impossible.
struct Key128 {
  uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL;
  void add(uint64_t v) {
    a = mix64(a ^ v);
    b = mix64(b + v * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
  }
  bool operator==(const Key128& o) const { return a == o.a && b == o.b; }
};

struct Key128Hash {
  size_t operator()(const Key128& k) const { return static_cast<size_t>(k.a ^ (k.b << 1)); }
};

}  // namespace minpy
