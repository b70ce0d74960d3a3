"""Faster stand-ins for MXNet's per-op Python helpers, installed only while a scope is open.

Every generated `mx.nd` function calls `_verify_all_legacy_ndarrays` (or the numpy
twin) before it invokes the op. MXNet's versions import `mxnet.numpy` inside the
function, which costs about 1.5 us per op -- a fifth of what recording an op costs.
These do the same checks with the import done once; on a bad argument they call
MXNet's own function, so the error is exactly MXNet's.
"""
import mxnet.ndarray.register as _register
from mxnet.numpy import ndarray as _np_ndarray

_REAL_LEGACY = _register._verify_all_legacy_ndarrays
_REAL_NP = _register._verify_all_np_ndarrays


def _outs(out):
    return () if out is None else (out if isinstance(out, (list, tuple)) else (out,))


def verify_all_legacy_ndarrays(op_name, func_name, args, out):
    for arr in args:
        if isinstance(arr, _np_ndarray):
            return _REAL_LEGACY(op_name, func_name, args, out)
    if out is not None:
        for arr in _outs(out):
            if isinstance(arr, _np_ndarray):
                return _REAL_LEGACY(op_name, func_name, args, out)
    return None


def verify_all_np_ndarrays(op_name, func_name, args, out):
    for arr in args:
        if arr is not None and not isinstance(arr, _np_ndarray):
            return _REAL_NP(op_name, func_name, args, out)
    if out is not None:
        for arr in _outs(out):
            if arr is not None and not isinstance(arr, _np_ndarray):
                return _REAL_NP(op_name, func_name, args, out)
    return None


def install():
    _register._verify_all_legacy_ndarrays = verify_all_legacy_ndarrays
    _register._verify_all_np_ndarrays = verify_all_np_ndarrays


def uninstall():
    _register._verify_all_legacy_ndarrays = _REAL_LEGACY
    _register._verify_all_np_ndarrays = _REAL_NP
