"""Our own kernels (cpp/kernels), loaded into MXNet as ordinary operators.

The library is built next to this file as `_kernels*.so` and registered with
MXNet's extension API (`MXLoadLib`), so compiled graphs can contain its ops
(`_minpy_fused_elemwise` and the multi-tensor optimizer updates `_minpy_multi_*_update`),
and `mx.nd._internal.<op>` / `mx.sym._internal.<op>` call them (exported code does).
`mx.library.load` would do the same but regenerate every MXNet op wrapper (0.8 s
at import); here only ours are made. Without the library the runtime still
works; it just does not fuse (`kernels()` returns None).
"""
import ctypes
import glob
import os
import warnings

import mxnet as mx
import mxnet.ndarray._internal as nd_internal
import mxnet.symbol._internal as sym_internal
from mxnet.base import _LIB, c_str, check_call
from mxnet.ndarray.register import _make_ndarray_function
from mxnet.symbol.register import _make_symbol_function

from . import _core

UPDATE_OPS = tuple("_minpy_multi_%s_update" % rule for rule in (
    "sgd", "sgd_mom", "nag_mom", "adam", "rmsprop", "rmspropalex", "adagrad", "mp_sgd", "mp_sgd_mom", "mp_nag_mom"))
OPS = ("_minpy_fused_elemwise", "_minpy_fc") + UPDATE_OPS


def _library_path():
    found = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_kernels*.so")))
    return found[0] if found else None


def load():
    """Registers the kernel library with MXNet once; returns its path or None."""
    if _core.kernels():
        return _core.kernels()
    path = _library_path()
    if path is None:
        return None
    try:
        check_call(_LIB.MXLoadLib(c_str(path), ctypes.c_uint(0)))
        _make_wrappers()
    except mx.base.MXNetError as e:  # a broken build must not break the runtime: run unfused
        warnings.warn("minpy_jit: kernel library %s not loaded, fusion is off: %s" % (path, e))
        return None
    _core.set_kernels(path)
    return path


def _make_wrappers():
    for name in OPS:
        handle = ctypes.c_void_p()
        check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(handle)))
        setattr(nd_internal, name, _make_ndarray_function(handle, name, name))
        setattr(sym_internal, name, _make_symbol_function(handle, name, name))


def kernels():
    """Path of the loaded kernel library, or None."""
    return _core.kernels() or None


def threads():
    """The kernels' thread settings: {"max_threads": the most threads one call of our kernels
    may use (MXNET_OMP_MAX_THREADS or OMP_NUM_THREADS when set, else the cores), "parallel_calls":
    calls that ran on more than one thread since the library loaded}, or None without the library."""
    path = kernels()
    if path is None:
        return None
    fn = ctypes.CDLL(path).minpy_kernels_threads  # the already loaded library: dlopen returns it
    most, calls = ctypes.c_int(), ctypes.c_int64()
    fn(ctypes.byref(most), ctypes.byref(calls))
    return {"max_threads": most.value, "parallel_calls": calls.value}
