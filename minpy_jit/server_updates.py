"""A dist kvstore's server optimizer as one C function, when the workers train under jit().

With the update on the kvstore (the Trainer's default for every dist kvstore) each server
runs the optimizer once per key and step, from its main thread, between receiving the
workers' gradients and answering them (kvstore_dist_server.h, ApplyUpdates): MXNet's
Python `Updater` from a ctypes callback, then an update op pushed to the engine that the
server waits for. On a 2-worker job of the W3 MLP that was most of the server's time, and
every worker waits for it at every step. A worker's jit() graphs do not run there.

What happens instead, for MXNet's own SGD and NAG (with or without momentum) and Adam (wd,
lr_mult/wd_mult, clip_gradient, any lr_scheduler) when `kv.set_optimizer` is called inside a
jit() scope (as Trainer.step does on its first call):
* the worker sends the optimizer as MXNet does (the servers install MXNet's Updater),
  then a second command: the same optimizer pickled through `_upgrade` of this module;
* a server unpickling it imports minpy_jit (the servers run the workers' command, so it is
  importable wherever the worker's is); if it cannot, the unpickling fails, MXNet reports it
  in the server's output and keeps the Updater of the first command: the job is right, just
  not faster;
* `_upgrade` then has the server's own `set_optimizer` replace the updater with ours
  (`_core.set_c_updater`, cpp/src/server_update.cc): per key it waits for the summed gradient
  and the stored weight as the engine would and runs, in the server's thread, the kernel
  the recorded Trainer update runs, with the float32 rates MXNet would parse; calls it does
  not model (row_sparse, float16, ...) go to MXNet's Updater, kept as the fallback.
The rates of a call are the optimizer's own: `_rates` below does for one key what its
update() does before it launches the op (the update count, `_get_lr(s)` / `_get_wd(s)`,
which call the lr_scheduler, and Adam's bias correction), in Python, at every call when the
rates can change (a scheduler, Adam), once per key when they cannot (SGD, NAG).
Outside jit() nothing changes: the servers run MXNet's Updater.

`set_c_updater(kv)` does the same for any kvstore whose updater is MXNet's Updater of such an
optimizer (tests use a local one: the same C function, without processes).
"""
import ctypes
import glob
import logging
import math
import os
import pickle

# Only modules a server has loaded when it unpickles a command (inside its `import mxnet`)
from mxnet import optimizer as _opt
from mxnet.base import _LIB as _REAL_LIB  # these calls touch no array: no guard
from mxnet.base import c_str, check_call, py_str
from mxnet.kvstore.kvstore import KVStore

from . import _core

_REAL_SET_OPTIMIZER = KVStore.set_optimizer
_REAL_SET_UPDATER = KVStore._set_updater
_CONTROLLER = 0  # kvstore_server.py's command that unpickles an optimizer (kController)
_log = logging.getLogger("minpy_jit")


def supported(optimizer):
    """MXNet's SGD, NAG or Adam itself (a subclass may override anything)."""
    return type(optimizer) in (_opt.SGD, _opt.NAG, _opt.Adam)


def _is_worker():
    flag = ctypes.c_int()
    check_call(_REAL_LIB.MXKVStoreIsWorkerNode(ctypes.byref(flag)))
    return bool(flag.value)


def _rates(o):
    """rates(key, device_id) -> (lr, wd) of one update of `key`, stepping the optimizer's count
    as its update does (the Updater first sets the weight's device as the current context)."""
    if type(o) is _opt.SGD:  # _update_impl over [key]: multi_sgd_update's lrs=/wds= items
        def rates(key, device_id):
            o._set_current_context(device_id)
            o._update_count([key])
            return o._get_lrs([key])[0], o._get_wds([key])[0]
    elif type(o) is _opt.NAG:
        def rates(key, device_id):
            o._set_current_context(device_id)
            o._update_count(key)
            return o._get_lr(key), o._get_wd(key)
    else:  # Adam.update, to the op's lr= and wd=
        def rates(key, device_id):
            o._set_current_context(device_id)
            o._update_count(key)
            lr = o._get_lr(key)
            wd = o._get_wd(key)
            t = o._index_update_count[key]
            coef1 = 1. - o.beta1**t
            coef2 = 1. - o.beta2**t
            lr *= math.sqrt(coef2)/coef1
            return lr, wd
    return rates


def _kernel(o):
    """Our kernel for the op o's update runs, its shared attributes, arrays per weight, and
    whether the rates are read as lrs=/wds= list items (SGD's multi_sgd_*) or fields."""
    attrs = [("rescale_grad", o.rescale_grad), ("clip_gradient", o.clip_gradient if o.clip_gradient else "-1")]
    if type(o) is _opt.Adam:
        return "_minpy_multi_adam_update", attrs + [("beta1", o.beta1), ("beta2", o.beta2),
                                                    ("epsilon", o.epsilon)], 4, False
    sgd = type(o) is _opt.SGD
    if o.momentum > 0:
        kernel = "_minpy_multi_sgd_mom_update" if sgd else "_minpy_multi_nag_mom_update"
        return kernel, attrs + [("momentum", o.momentum)], 3, sgd
    # NAG without momentum runs sgd_update, whose arithmetic our kernel takes as a formula
    return "_minpy_multi_sgd_update", attrs + [("formula", "multi_sgd_update" if sgd else "sgd_update")], 2, sgd


def set_c_updater(kv):
    """Replaces the Python Updater of kvstore `kv` by the C one, which falls back to it for
    calls it does not model. Returns a handle for counts(), or None (nothing changed) if
    the updater is not MXNet's Updater of a supported optimizer or without the kernel library."""
    updater = getattr(kv, "_updater", None)
    if type(updater) is not _opt.Updater or not supported(updater.optimizer):
        return None
    o = updater.optimizer
    kernel, attrs, stride, list_items = _kernel(o)
    every_call = o.lr_scheduler is not None or type(o) is _opt.Adam
    c_updater = _core.set_c_updater(
        kv.handle.value, ctypes.cast(kv._updater_func, ctypes.c_void_p).value,
        ctypes.cast(kv._str_updater_func, ctypes.c_void_p).value, kernel, attrs, stride, _rates(o), every_call,
        list_items)
    kv._minpy_c_updater = c_updater  # the ctypes callbacks it falls back to live as long as kv
    return c_updater


def counts(c_updater):
    """(updates run by the C updater, updates handed to MXNet's Updater)."""
    return _core.c_updater_counts(c_updater)


# ----------------------------------------------------------------------------- worker side

class _ForServers:
    """Pickles as `_upgrade(optimizer)`: what a server runs when it unpickles the command."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def __reduce__(self):
        return _upgrade, (self.optimizer,)


def _set_optimizer(self, optimizer):
    _REAL_SET_OPTIMIZER(self, optimizer)
    if _core.depth() and "dist" in self.type and supported(optimizer) and _is_worker():
        # protocol 0, as MXNet sends its own command: ps-lite carries it as a string
        self._send_command_to_servers(_CONTROLLER, py_str(pickle.dumps(_ForServers(optimizer), 0)))


def install():
    KVStore.set_optimizer = _set_optimizer


def uninstall():
    KVStore.set_optimizer = _REAL_SET_OPTIMIZER


# ----------------------------------------------------------------------------- server side

_pending = []  # the optimizer _upgrade returned, until the server's set_optimizer installs it


def _upgrade(optimizer):
    """Runs in a server as it unpickles the worker's command; the server then calls
    kv.set_optimizer(optimizer), which ends in _set_updater below."""
    if not _is_worker() and _load_kernels():
        KVStore._set_updater = _server_set_updater
        _pending[:] = [optimizer]
    return optimizer


def _load_kernels():
    """The kernel library registered with MXNet (what kernels.load() does in a worker, without
    the op wrappers, which need parts of mxnet a server has not loaded)."""
    if _core.kernels():
        return True
    found = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_kernels*.so")))
    if not found:
        return False
    check_call(_REAL_LIB.MXLoadLib(c_str(found[0]), ctypes.c_uint(0)))
    _core.set_kernels(found[0])
    return True


def _server_set_updater(self, updater):
    _REAL_SET_UPDATER(self, updater)
    mine = bool(_pending) and getattr(updater, "optimizer", None) is _pending[0]
    del _pending[:]
    if mine:
        installed = set_c_updater(self) is not None
        _log.info("minpy_jit: server %s the C updater for %s", "runs" if installed else "could not install",
                     type(updater.optimizer).__name__)
