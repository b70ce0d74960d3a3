"""Where minpy_jit hooks into MXNet, and how MXNet's own code keeps running outside jit().

Two hooks, with frontend.py's faster stand-ins for MXNet's per-op argument checks and the
NDArray properties read per argument or per parameter, optimizers.py's AdaGrad update
recorded as one kernel call, and trainer.py's Trainer._update done in one C call:

1. `mxnet.ndarray.register._imperative_invoke` -- the one function every
   generated `mx.nd` op, NDArray operator, optimizer update and Gluon layer
   calls. It is replaced by `_core.invoke`, which records instead of running.

2. Every mxnet module's `_LIB` (the ctypes handle on libmxnet) is replaced by a
   proxy. Each C API function that could read or write array data -- which is
   every function not on a short list of metadata queries -- first flushes
   pending work. So an access path nobody anticipated (a new NDArray method,
   library code calling the C API) costs a flush, never a wrong value. The
   guard also knows when MXNet calls Python back from inside such a call (a
   kvstore updater, a CustomOp): ops there run eagerly (callbacks.cc).

They go in once, when the first jit() scope opens (scope.cc; again for mxnet modules imported
since), and stay. Every stand-in first asks the extension whether it has anything to do
(`_core.hooks_active()`: a scope open on some thread, work recorded, or a launch queued) and
otherwise calls MXNet's own code; those that record (the invoke, AdaGrad, the Trainer's update
and allreduce) also ask whether the calling thread has a scope open. So eager code outside any
scope runs MXNet's code as if nothing were installed, and `MINPY_JIT=0` (no scope ever opens)
leaves MXNet untouched. `uninstall()` puts MXNet's code back.
"""
import ctypes
import os
import sys

import mxnet
import mxnet.base
import mxnet.ndarray.register as _register

from . import _core, frontend, kvstore_updates, np_arithmetic, op_functions, optimizers, server_updates, trainer

_REAL_LIB = mxnet.base._LIB
_REAL_INVOKE = _register._imperative_invoke

# C API functions that touch no array data and no random state: no flush needed.
# (MXNDArrayGetGrad hands out an array's gradient buffer: no pending work changes which buffer
# that is, since a lazy result has none and attach_grad flushes.)
SAFE = frozenset("""
MXGetLastError MXGetVersion MXGetGPUCount MXGetGPUMemoryInformation64 MXLibInfoFeatures
MXNDArrayCreate MXNDArrayCreateEx MXNDArrayCreateEx64 MXNDArrayCreateNone MXNDArrayCreateSparseEx
MXNDArrayFree MXNDArrayGetShape MXNDArrayGetShapeEx MXNDArrayGetShapeEx64 MXNDArrayGetDType
MXNDArrayGetContext MXNDArrayGetStorageType MXNDArrayGetGradState MXNDArrayGetGrad
MXAutogradIsRecording MXAutogradIsTraining MXAutogradSetIsRecording MXAutogradSetIsTraining
MXIsNumpyShape MXSetIsNumpyShape MXIsNumpyDefaultDtype MXSetIsNumpyDefaultDtype
NNGetOpHandle MXListAllOpNames NNListAllOpNames MXSymbolListAtomicSymbolCreators
MXSymbolGetAtomicSymbolInfo MXSymbolGetAtomicSymbolName MXFuncGetInfo MXListFunctions
MXEngineSetBulkSize MXSetNumOMPThreads
MXFreeCachedOp MXExecutorFree MXDataIterFree MXKVStoreFree MXRecordIOWriterFree MXRecordIOReaderFree
MXKVStoreGetType MXKVStoreGetRank MXKVStoreGetGroupSize MXKVStoreIsWorkerNode MXKVStoreIsServerNode
MXKVStoreIsSchedulerNode
""".split())

# Friendly flush causes for the C API calls users reach through common methods.
CAUSES = {
    "MXNDArraySyncCopyToCPU": "asnumpy",
    "MXNDArrayWaitToRead": "wait_to_read",
    "MXNDArrayWaitToWrite": "wait_to_write",
    "MXNDArrayWaitAll": "waitall",
    "MXAutogradBackwardEx": "backward",
    "MXAutogradBackward": "backward",
    "MXAutogradComputeGradient": "backward",
    "MXAutogradMarkVariables": "attach_grad",
    "MXNDArrayReshape": "reshape view",
    "MXNDArrayReshape64": "reshape view",
    "MXNDArraySlice": "slice view",
    "MXNDArraySlice64": "slice view",
    "MXNDArrayAt": "index view",
    "MXNDArrayAt64": "index view",
    "MXNDArraySyncCopyFromCPU": "write from numpy",
    "MXNDArraySyncCopyFromNDArray": "write from array",
    "MXNDArraySaveRawBytes": "pickle",
    "MXNDArraySave": "nd.save",
    "MXInvokeCachedOp": "hybridized block",
    "MXInvokeCachedOpEx": "hybridized block",
    "MXImperativeInvokeEx": "eager op",
    "MXImperativeInvoke": "eager op",
    "MXRandomSeed": "random seed",
    "MXRandomSeedContext": "random seed",
    "MXNDArrayDetach": "detach",
    "MXNDArrayToDLPack": "dlpack",
    "MXNDArrayGetData": "data pointer",
}


# kvstore calls: kind, and the positions of the argument counting the arrays pushed / pulled.
KVSTORE_CALLS = {}
for _names, _kind, _pushed, _pulled in [
        ("MXKVStoreInit MXKVStoreInitEx", "init", 1, None),
        ("MXKVStorePush MXKVStorePushEx", "push", 1, None),
        ("MXKVStorePull MXKVStorePullEx MXKVStorePullWithSparse MXKVStorePullWithSparseEx "
         "MXKVStorePullRowSparse MXKVStorePullRowSparseEx", "pull", None, 1),
        ("MXKVStorePushPull MXKVStorePushPullEx", "pushpull", 1, 3),
        ("MXKVStoreBroadcast MXKVStoreBroadcastEx", "broadcast", 1, 3),
        ("MXKVStoreBarrier", "barrier", None, None)]:
    for _name in _names.split():
        KVSTORE_CALLS[_name] = (_kind, _pushed, _pulled)


class _GuardedLib:
    """Stands in for the ctypes CDLL: flushes before any call that may see data."""

    def __init__(self, lib):
        object.__setattr__(self, "_lib", lib)

    def __getattr__(self, name):
        fn = getattr(self._lib, name)
        if name in SAFE or name.startswith(("MXSymbol", "NNSymbol")) or not callable(fn):
            guarded = fn
        elif name in KVSTORE_CALLS:
            kind, pushed_at, pulled_at = KVSTORE_CALLS[name]
            guarded = _counted_kvstore_call(_guard(fn, "kvstore " + kind), kind, pushed_at, pulled_at)
        else:
            guarded = _guard(fn, CAUSES.get(name, name))
        object.__setattr__(self, name, guarded)  # cached: later lookups skip __getattr__
        return guarded


def _guard(fn, cause):
    # In C++ (callbacks.cc): flushes what the call may see, and marks the thread as inside
    # MXNet while fn runs, so that ops of a Python callback MXNet makes meanwhile (a kvstore
    # updater, a CustomOp) run eagerly instead of being recorded.
    return _core.guard(fn, cause, backward=(cause == "backward"))


def _counted_kvstore_call(guarded, kind, pushed_at, pulled_at):
    """The guarded kvstore call, counted first (stats()['kvstore']) when the calling thread has
    a scope open (eager code that runs once the hooks are in is not counted): kind, and the
    arrays it pushes and pulls, read from the argument that gives their number."""
    note = _core.note_kvstore_call
    depth = _core.depth

    def count(args, at):
        return 0 if at is None else getattr(args[at], "value", args[at])

    def counted_kvstore_call(*args):
        if depth():
            note(kind, count(args, pushed_at), count(args, pulled_at))
        return guarded(*args)

    counted_kvstore_call.__name__ = getattr(guarded, "__name__", kind)
    return counted_kvstore_call


_PROXY = _GuardedLib(_REAL_LIB)
_lib_modules = []
_modules_seen = 0


def _modules_holding_lib():
    global _lib_modules, _modules_seen
    if len(sys.modules) != _modules_seen:
        _modules_seen = len(sys.modules)
        _lib_modules = [m for name, m in list(sys.modules.items())
                        if name.startswith("mxnet") and getattr(m, "_LIB", None) in (_REAL_LIB, _PROXY)]
    return _lib_modules


# Both idempotent: the C++ scope code (scope.cc) calls _patch when a scope opens and the hooks
# are not in (or mxnet modules were imported since), _unpatch from uninstall(); each is run
# again to completion if an interrupt stops it.
# The modules that stand in for MXNet Python code (each install/uninstall).
_STAND_INS = (frontend, np_arithmetic, op_functions, optimizers, kvstore_updates, server_updates, trainer)


def _patch():
    _register._imperative_invoke = _core.invoke
    for stand_in in _STAND_INS:
        stand_in.install()
    for m in _modules_holding_lib():
        m._LIB = _PROXY


def _unpatch():
    _register._imperative_invoke = _REAL_INVOKE
    for stand_in in _STAND_INS:
        stand_in.uninstall()
    for m in _modules_holding_lib():
        m._LIB = _REAL_LIB


def hooks_installed():
    """Whether the stand-ins are in place (from the first jit() scope on, until uninstall())."""
    return _register._imperative_invoke is _core.invoke


def hooks_active():
    """Whether the stand-ins act: a scope open on some thread, work recorded or a launch queued.
    Otherwise every one of them calls MXNet's own code."""
    return _core.hooks_active()


def uninstall():
    """Puts MXNet's own Python code back in place (the next jit() scope installs the hooks
    again). Returns False, doing nothing, while hooks_active()."""
    return _core.uninstall_hooks()


def _library_dirs():
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [os.path.dirname(os.path.abspath(mxnet.__file__)) + os.sep, here + os.sep]
    import contextlib
    dirs.append(os.path.abspath(contextlib.__file__))
    return dirs


def _init():
    from mxnet.ndarray.ndarray import NDArray
    try:
        from mxnet.numpy import ndarray as np_ndarray
    except ImportError:  # pragma: no cover - mxnet built without numpy front end
        np_ndarray = NDArray
    from .errors import OpInputError, mxnet_error
    _core.set_mxnet_error(mxnet_error)
    _core.install(_REAL_INVOKE, NDArray, np_ndarray, ctypes.c_void_p, OpInputError, _library_dirs(),
                  os.path.dirname(os.path.abspath(mxnet.__file__)) + os.sep)
    import contextlib
    _core.set_scope_hooks(_patch, _unpatch, contextlib.__file__)


_init()
