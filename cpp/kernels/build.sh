#!/bin/sh
# Stand-alone build of the kernel library (setup.py builds the same sources as
# the minpy_jit._kernels extension). Usage: cpp/kernels/build.sh [OUT.so] [PYTHON]
# No -ffast-math: results must stay bit-identical to MXNet's float32 kernels.
# -fno-math-errno (sqrtf becomes a vector sqrt) and -fno-trapping-math (lets GCC
# if-convert the float compares/selects so the loops vectorize) change no values.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/../../build/kernels/libminpy_kernels.so}
PY=${2:-python3}
M=$("$PY" -c 'import os, mxnet; print(os.path.dirname(mxnet.__file__))' 2>/dev/null | tail -1)
mkdir -p "$(dirname "$OUT")"
exec g++ -shared -fPIC -std=c++17 -O3 -ffp-contract=off -fno-math-errno -fno-trapping-math -fopenmp \
  -I"$M/include" "$HERE"/*.cc "$M/src/lib_api.cc" -o "$OUT"
