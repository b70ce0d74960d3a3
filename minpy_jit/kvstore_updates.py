"""A Trainer's update on a local kvstore as one batch of updates, in a thread with a jit() scope open.

With `update_on_kvstore` (the Trainer's default for kvstore 'local' and 'device'), MXNet 1.9.1's
`Trainer._allreduce_grads` calls `kv.pushpull(i, grads, out=weights)` once per parameter, and
inside each call the kvstore calls the optimizer's `Updater` back from C for that one key
(KVStoreLocal: PushPullImpl is PushImpl -- reduce the gradients, call the updater with the
reduced gradient and the stored weight -- then PullImpl, broadcasting the stored weight). Ops
called from a C callback run eagerly (callbacks.cc), one Python updater call per parameter:
about 55 us a parameter here against 15 for the same update recorded as one kernel call.

While a scope is open, that loop becomes: one `push` of every key (one per key from three
contexts on, which keeps MXNet's order of the gradient sum: see the push below) with an updater
that only collects (key, reduced gradient, stored weight); the real `Updater` called once with the lists,
outside the callback, so its ops are recorded like any other update (SGD's multi-weight ops on
the stored weights, in pinned memory or beside gradients of other contexts, which no graph
takes, run as our kernel launched directly: record.cc, launch_cpu_memory_update); then one `pull` of every key, whose guard runs the recorded updates
first. Per key, the kvstore sees the same reduce, update, broadcast in the same order, and
keys touch disjoint arrays, so only the interleaving across keys changes (and the engine
priorities, which order work, not values).

The Updater called with lists does what its calls one key at a time do when
* every stored weight is on one device (it counts updates per device of its first weight),
* the optimizer's step count cannot differ between the two: no lr_scheduler (it reads the
  largest step count over all keys, which one-key-at-a-time calls raise key by key), or every
  key at the same count (then the largest is the same at every key either way),
* the optimizer is one of MXNet's own, whose update depends only on its own key's state and
  counts (not LARS, LBSGD, SGLD, or a subclass that may override anything).
Otherwise, and for dist kvstores (the servers run the optimizer), sparse gradients or weights,
string keys or a custom updater, MXNet's own loop runs.
"""
import ctypes

import mxnet.optimizer as _opt
from mxnet.base import _LIB as _REAL_LIB  # setting the updater touches no data: no guard
from mxnet.base import NDArrayHandle, check_call
from mxnet.gluon import trainer as _trainer
from mxnet.kvstore import KVStore
from mxnet.ndarray.ndarray import NDArray

from . import _core

_REAL_ALLREDUCE = _trainer.Trainer._allreduce_grads
_depth = _core.depth

# KVStoreLocal's kinds; 'nccl' (GPU only) and the dist kinds keep MXNet's loop.
_LOCAL_KINDS = frozenset(["local", "device", "local_update_cpu", "local_allreduce_cpu",
                          "local_allreduce_device"])
# MXNet's optimizers whose update of a weight is one MXNet op (or one multi-weight op for several),
# reading only that weight's state and counts. (AdaGrad, AdaDelta and Adamax run a dozen
# elementwise ops per weight, which on arrays of two contexts would cost a flush per context
# switch: they keep the callback, which runs them eagerly.)
_OPTIMIZERS = tuple(getattr(_opt, name) for name in ("SGD", "NAG", "Adam", "RMSProp", "Ftrl", "FTML", "Signum"))

_INT_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_int, NDArrayHandle, NDArrayHandle, ctypes.c_void_p)
_STR_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_char_p, NDArrayHandle, NDArrayHandle, ctypes.c_void_p)


class _Collector:
    """The updater MXNet calls during the batched push: it keeps what the real one would get."""

    def __init__(self):
        self.calls = []
        self.int_fn = _INT_PROTO(self._collect)
        self.str_fn = _STR_PROTO(self._collect)

    def _collect(self, key, recv_handle, local_handle, _):
        # The C API hands over new handles (copies sharing the kvstore's storage): ours now.
        self.calls.append((key, NDArray(NDArrayHandle(recv_handle)), NDArray(NDArrayHandle(local_handle))))


def _batchable(trainer):
    kv = trainer._kvstore
    if type(kv) is not KVStore or not trainer._update_on_kvstore or kv.type not in _LOCAL_KINDS:
        return False
    updater = getattr(kv, "_updater", None)
    return (type(updater) is _opt.Updater and updater.optimizer is trainer._optimizer
            and type(trainer._optimizer) in _OPTIMIZERS)


def _same_as_one_at_a_time(optimizer, calls):
    devices = {local.context.device_id for _, _, local in calls}
    if len(devices) != 1:
        return False
    if optimizer.lr_scheduler is None:
        return True
    counts = optimizer._all_index_update_counts.get(devices.pop(), {})
    return len({counts.get(key, optimizer.begin_num_update) for key, _, _ in calls}) == 1


def _allreduce_grads(self):
    if not _depth() or not _batchable(self):  # no jit() scope on this thread: MXNet's loop
        return _REAL_ALLREDUCE(self)
    keys, grads, weights = [], [], []
    for i, param in enumerate(self._params):
        if param.grad_req == "null":
            continue
        grad_list = param.list_grad()
        if grad_list[0].stype != "default" or param._stype != "default":
            return _REAL_ALLREDUCE(self)
        keys.append(i)
        grads.append(grad_list)
        weights.append(param.list_data())
    if not keys:
        return None
    kv = self._kvstore
    collector = _Collector()
    check_call(_REAL_LIB.MXKVStoreSetUpdaterEx(kv.handle, collector.int_fn, collector.str_fn, None))
    try:
        # A push of several keys groups its arrays by key with std::sort on the key alone
        # (KVStoreLocal::GroupKVPairs), which is not stable: past 16 arrays it may reorder a
        # key's arrays, and the reduction then sums the contexts' gradients in another order than
        # MXNet's loop, whose pushpull of one key sorts that key's arrays alone (measured: 3
        # contexts, 6 keys, 2e-8 to 7e-7 off after a few steps). Two arrays sum to the same bits
        # in either order; from three contexts on, each key is pushed alone, as MXNet pushes it.
        if max(len(g) for g in grads) <= 2:
            kv.push(keys, grads)
        else:
            for key, grad_list in zip(keys, grads):
                kv.push(key, grad_list)
    finally:
        check_call(_REAL_LIB.MXKVStoreSetUpdaterEx(kv.handle, kv._updater_func, kv._str_updater_func, None))
    calls = collector.calls
    updater = kv._updater
    if calls and _same_as_one_at_a_time(updater.optimizer, calls):
        updater([k for k, _, _ in calls], [g for _, g, _ in calls], [w for _, _, w in calls])
    else:
        for key, grad, weight in calls:
            updater(key, grad, weight)
    del calls[:]
    kv.pull(keys, out=weights)
    return None


def install():
    _trainer.Trainer._allreduce_grads = _allreduce_grads


def uninstall():
    _trainer.Trainer._allreduce_grads = _REAL_ALLREDUCE
