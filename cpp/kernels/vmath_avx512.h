// vmath.h loops built for AVX-512 in a translation unit of their own (vmath_avx512.cc).
// Call them only when the CPU has AVX-512F (fused_elemwise.cc: wide_lanes()).
#pragma once

#include <cstdint>

namespace minpy_kernels {
namespace vm {

// d[j] = tanhf(a[j]), glibc's bits (vm::tanhf_fdlibm), sixteen lanes at a time.
void tanhf_loop_avx512(float* __restrict d, const float* __restrict a, int64_t n);

}  // namespace vm
}  // namespace minpy_kernels
