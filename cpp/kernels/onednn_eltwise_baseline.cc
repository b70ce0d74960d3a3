// onednn_eltwise.h's loops for the baseline x86-64 target: one float at a time, libm's fmaf
// (exact, slow), for a CPU without AVX2 and FMA (onednn_eltwise_loops.h).
#include <cstdint>
#include <cstring>
#include <type_traits>

#define ONEDNN_ISA baseline
#define ONEDNN_LANES float
#include "onednn_eltwise_loops.inc"
