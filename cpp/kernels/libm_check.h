// Which reproduction of libm each fused function can use on this machine.
//
// Eager MXNet computes tanh, exp and sigmoid with the scalar tanhf / expf of the libm it
// is linked with. vmath.h reproduces glibc 2.36's algorithms in vectorizable form; when
// this library loads, they are compared with the libm actually present, and a function
// whose reproduction differs there is computed by calling libm itself (slower, still
// eager's result).
#pragma once

namespace minpy_kernels {

enum class ExpForm { kFused, kUnfused, kLibm };  // vm::expf_glibc<true>, <false>, or ::expf

struct LibmForms {
  bool tanh_reproduced;  // vm::tanhf_fdlibm equals ::tanhf (else ::tanhf is called)
  ExpForm exp;
};

const LibmForms& libm_forms();  // checked once, on first use

}  // namespace minpy_kernels
