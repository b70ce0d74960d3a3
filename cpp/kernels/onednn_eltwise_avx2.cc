// onednn_eltwise.h's loops built for avx2,fma (why a file per instruction set: onednn_eltwise_loops.h).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define ONEDNN_ISA avx2
#define ONEDNN_LANES vm::F8
#include "onednn_eltwise_loops.inc"
#pragma GCC pop_options
