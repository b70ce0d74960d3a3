"""Faster stand-ins for MXNet's per-op Python helpers, acting while jit() has work (intercept.py).

* Every generated `mx.nd` function calls `_verify_all_legacy_ndarrays` (or the numpy
  twin) before it invokes the op. MXNet's versions import `mxnet.numpy` inside the
  function: 200 `sgd_mom_update` calls took 2.47 us each with MXNet's check and 1.30 us
  with a Python one that imports once (MXNet's wrapper alone, the invoke stubbed out). The
  stand-ins are C builtins from the extension (0.98 us) that do the same isinstance checks;
  on a bad argument they call MXNet's own function, so the error is exactly MXNet's.
* NDArray properties read per argument or per parameter go through ctypes in MXNet:
  `context` (every Gluon block call, for each argument: 1.58 us a call; this one 0.68 us),
  `dtype`, `stype` and `_fresh_grad` (Trainer.step, for every parameter). The stand-ins make
  the same C API call from the extension. `context` builds the same fresh Context (fresh,
  because `with ctx:` stores state on the object); setting `_fresh_grad` flushes pending
  work first, as MXNet's path through the guarded library does. Should a C call fail,
  MXNet's own property runs, so the error is MXNet's.
While `_core.hooks_active()` is false (no scope open, nothing recorded) each calls MXNet's own.
"""
import mxnet.ndarray.register as _register
from mxnet.context import Context
from mxnet.ndarray import ndarray as _nd
from mxnet.ndarray.ndarray import NDArray

from . import _core

_REAL_LEGACY = _register._verify_all_legacy_ndarrays
_REAL_NP = _register._verify_all_np_ndarrays
_REAL = {name: NDArray.__dict__[name] for name in ("context", "dtype", "stype", "_fresh_grad")}

# C builtins (bindings.cc) that call MXNet's function only to raise its error
verify_all_legacy_ndarrays = _core.argument_check(_REAL_LEGACY, False)
verify_all_np_ndarrays = _core.argument_check(_REAL_NP, True)

_DEVTYPE2STR = Context.devtype2str
_DTYPE_MX_TO_NP = _nd._DTYPE_MX_TO_NP
_STORAGE_TYPE_ID_TO_STR = _nd._STORAGE_TYPE_ID_TO_STR
_device_of, _dtype_id, _stype_id = _core.device_of, _core.dtype_id, _core.stype_id
_grad_state, _set_grad_state = _core.grad_state, _core.set_grad_state
_active = _core.hooks_active
_REAL_CONTEXT, _REAL_DTYPE, _REAL_STYPE = (_REAL[name].fget for name in ("context", "dtype", "stype"))
_REAL_GET_FRESH, _REAL_SET_FRESH = _REAL["_fresh_grad"].fget, _REAL["_fresh_grad"].fset


# The builtins raise ValueError when the C call fails; MXNet's property then gives its error.
def _context(self):
    if not _active():
        return _REAL_CONTEXT(self)
    try:
        dev_type, dev_id = _device_of(self)
    except ValueError:
        return _REAL_CONTEXT(self)
    return Context(_DEVTYPE2STR[dev_type], dev_id)


def _dtype(self):
    if not _active():
        return _REAL_DTYPE(self)
    try:
        return _DTYPE_MX_TO_NP[_dtype_id(self)]
    except ValueError:
        return _REAL_DTYPE(self)


def _stype(self):
    if not _active():
        return _REAL_STYPE(self)
    try:
        return _STORAGE_TYPE_ID_TO_STR[_stype_id(self)]
    except ValueError:
        return _REAL_STYPE(self)


def _get_fresh_grad(self):
    if not _active():
        return _REAL_GET_FRESH(self)
    try:
        return _grad_state(self)
    except ValueError:
        return _REAL_GET_FRESH(self)


def _set_fresh_grad(self, state):
    if not _active():
        return _REAL_SET_FRESH(self, state)
    try:
        _set_grad_state(self, state)
    except ValueError:
        _REAL_SET_FRESH(self, state)


_FAST = {
    "context": property(_context, doc=_REAL["context"].__doc__),
    "dtype": property(_dtype, doc=_REAL["dtype"].__doc__),
    "stype": property(_stype, doc=_REAL["stype"].__doc__),
    "_fresh_grad": property(_get_fresh_grad, _set_fresh_grad, doc=_REAL["_fresh_grad"].__doc__),
}


def install():
    _register._verify_all_legacy_ndarrays = verify_all_legacy_ndarrays
    _register._verify_all_np_ndarrays = verify_all_np_ndarrays
    for name, prop in _FAST.items():
        setattr(NDArray, name, prop)


def uninstall():
    _register._verify_all_legacy_ndarrays = _REAL_LEGACY
    _register._verify_all_np_ndarrays = _REAL_NP
    for name, prop in _REAL.items():
        setattr(NDArray, name, prop)
