"""Builds minpy_jit, its C++ extension minpy_jit._core and its MXNet operator library
minpy_jit._kernels.

The extension compiles against the headers shipped inside the installed mxnet
wheel (mxnet/include) and links that wheel's libmxnet.so. The rpath points at
the sibling mxnet package ($ORIGIN/../mxnet), so the same build works wherever
both packages share a site-packages; minpy_jit imports mxnet first anyway, and
the loader then reuses the copy mxnet already mapped.
"""
import glob
import os

import mxnet
import pybind11
from setuptools import Extension, setup

MX_DIR = os.path.dirname(mxnet.__file__)

core = Extension(
    "minpy_jit._core",
    sources=sorted(glob.glob("cpp/src/*.cc")),
    depends=sorted(glob.glob("cpp/src/*.h")),
    include_dirs=[pybind11.get_include(), os.path.join(MX_DIR, "include"), "cpp/src"],
    library_dirs=[MX_DIR],
    extra_link_args=["-l:libmxnet.so", "-Wl,-rpath,$ORIGIN/../mxnet", "-Wl,-rpath," + MX_DIR],
    # -Wno-unknown-pragmas: MXNet's headers carry `#pragma omp` (we build without OpenMP)
    extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden", "-Wno-unused-parameter", "-Wno-unknown-pragmas"],
    language="c++",
)

# MXNet custom-operator library (fused elementwise programs, multi-tensor SGD), loaded
# with MXLoadLib / mxnet.library.load, never imported: it has no PyInit. It needs only
# lib_api.cc from the wheel (through cpp/kernels/lib_api_unit.cc), not libmxnet.so. No -ffast-math: the kernels must stay
# bit-identical to MXNet's float32 ones (-fno-math-errno / -fno-trapping-math change no
# values; they let GCC vectorize sqrt and the compare/select loops).
kernels = Extension(
    "minpy_jit._kernels",
    # lib_api.cc itself comes in through cpp/kernels/lib_api_unit.cc (one function replaced)
    sources=sorted(glob.glob("cpp/kernels/*.cc")),
    depends=sorted(glob.glob("cpp/kernels/*.h") + glob.glob("cpp/kernels/*.inc")),  # an edit rebuilds the library
    include_dirs=[os.path.join(MX_DIR, "include"), os.path.join(MX_DIR, "src")],
    extra_compile_args=["-std=c++17", "-O3", "-ffp-contract=off", "-fno-math-errno",
                        "-fno-trapping-math", "-pthread"],
    extra_link_args=["-pthread"],
    language="c++",
)

setup(
    name="minpy_jit",
    version="0.1.0",
    description="Lazy-evaluation JIT runtime for Apache MXNet 1.9.1",
    packages=["minpy_jit"],
    ext_modules=[core, kernels],
    install_requires=["mxnet==1.9.1", "numpy<1.24"],
    python_requires=">=3.8",
)
