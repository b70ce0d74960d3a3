// onednn_eltwise.h's loops built for avx512f (why a file per instruction set: onednn_eltwise_loops.h).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f")
#define ONEDNN_ISA avx512
#define ONEDNN_LANES vm::F16
#include "onednn_eltwise_loops.inc"
#pragma GCC pop_options
