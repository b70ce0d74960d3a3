"""Builds minpy_jit and its C++ extension minpy_jit._core.

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
    include_dirs=[pybind11.get_include(), os.path.join(MX_DIR, "include"), "cpp/src"],
    library_dirs=[MX_DIR],
    extra_link_args=["-l:libmxnet.so", "-Wl,-rpath,$ORIGIN/../mxnet", "-Wl,-rpath," + MX_DIR],
    extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden", "-Wno-unused-parameter"],
    language="c++",
)

setup(
    name="minpy_jit",
    version="0.1.0",
    description="Lazy-evaluation JIT runtime for Apache MXNet 1.9.1",
    packages=["minpy_jit"],
    ext_modules=[core],
    install_requires=["mxnet==1.9.1", "numpy<1.24"],
    python_requires=">=3.8",
)
