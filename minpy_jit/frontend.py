"""Faster stand-ins for MXNet's per-op Python helpers, installed only while a scope is open.

* Every generated `mx.nd` function calls `_verify_all_legacy_ndarrays` (or the numpy
  twin) before it invokes the op. MXNet's versions import `mxnet.numpy` inside the
  function: 200 `sgd_mom_update` calls took 2.47 us each with MXNet's check and 1.30 us
  with a Python one that imports once (MXNet's wrapper alone, the invoke stubbed out). The
  stand-ins are C builtins from the extension; MXNet's check still raises any error.
  These do the same checks with the import done once; on a bad argument they call
  MXNet's own function, so the error is exactly MXNet's.
* `NDArray.context`, which every Gluon block call reads for each argument, goes through
  ctypes (1.58 us a call; this one 0.68 us): the stand-in asks the extension for the same two numbers and
  builds the same fresh Context (fresh, because `with ctx:` stores state on the object).
"""
import mxnet.ndarray.register as _register
from mxnet.context import Context
from mxnet.ndarray.ndarray import NDArray

from . import _core

_REAL_CONTEXT = NDArray.__dict__["context"]
_DEVTYPE2STR = Context.devtype2str
_device_of = _core.device_of

_REAL_LEGACY = _register._verify_all_legacy_ndarrays
_REAL_NP = _register._verify_all_np_ndarrays


# C builtins (bindings.cc) that call MXNet's function only to raise its error
verify_all_legacy_ndarrays = _core.argument_check(_REAL_LEGACY, False)
verify_all_np_ndarrays = _core.argument_check(_REAL_NP, True)


def _context(self):
    dev_type, dev_id = _device_of(self)
    return Context(_DEVTYPE2STR[dev_type], dev_id)


_FAST_CONTEXT = property(_context, doc=_REAL_CONTEXT.__doc__)


def install():
    _register._verify_all_legacy_ndarrays = verify_all_legacy_ndarrays
    _register._verify_all_np_ndarrays = verify_all_np_ndarrays
    NDArray.context = _FAST_CONTEXT


def uninstall():
    _register._verify_all_legacy_ndarrays = _REAL_LEGACY
    _register._verify_all_np_ndarrays = _REAL_NP
    NDArray.context = _REAL_CONTEXT
