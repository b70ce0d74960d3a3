// Sixteen-lane (AVX-512) builds of vmath.h's slowest loop, tanh.
//
// Why a file of its own: GCC gives a vector type its machine mode where the type is
// declared, from the ISA enabled there. Declared in a file built for the baseline ISA, a
// 64-byte vector stays a memory block even inside an avx512f target clone, and its code is
// slower than eight lanes (5.4 against 3.2 ns an element). Here the target pragma comes
// before vmath.h, so F16 is one AVX-512 register: 1.9 ns an element on this machine kind
// (tanh's loop is bound by its dependency chain through two divisions; wider vectors overlap
// more of it). Only vmath.h's static inline functions and this file's own function are
// compiled for AVX-512 (the standard headers are included before the pragma), so no inline
// function shared with other files can be taken from this build on a CPU without AVX-512.
// Every lane runs the same float operations whatever the width: F16 gives F8's bits, and both
// equal libm's tanhf on all 2^32 inputs (cpp/kernels/dev/tanh_lanes_check.cc).
#include <cstdint>
#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx512f")

#include "vmath.h"
#include "vmath_avx512.h"

namespace minpy_kernels {
namespace vm {

void tanhf_loop_avx512(float* __restrict d, const float* __restrict a, int64_t n) {
  tanhf_fdlibm_loop<F16>(d, a, n);
}

}  // namespace vm
}  // namespace minpy_kernels

#pragma GCC pop_options
