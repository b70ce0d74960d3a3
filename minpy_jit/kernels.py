"""Our own kernels (cpp/kernels), loaded into MXNet as ordinary operators.

The library is built next to this file as `_kernels*.so` and registered with
MXNet's extension API (`mx.library.load`), so compiled graphs can contain its
ops (`_minpy_fused_elemwise`, `_minpy_multi_sgd_update`,
`_minpy_multi_sgd_mom_update`) and exported graphs can call them as
`mx.nd.<op>`. Without the library the runtime still works; it just does not fuse
(`kernels()` returns None, `config(fuse=...)` has no effect).
"""
import glob
import os
import warnings

import mxnet as mx

from . import _core


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
        mx.library.load(path, verbose=False)
    except mx.base.MXNetError as e:  # a broken build must not break the runtime: run unfused
        warnings.warn("minpy_jit: kernel library %s not loaded, fusion is off: %s" % (path, e))
        return None
    _core.set_kernels(path)
    return path


def kernels():
    """Path of the loaded kernel library, or None."""
    return _core.kernels() or None
