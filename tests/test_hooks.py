"""intercept.py / scope.cc: MXNet's hooks go in once, at the first jit() scope, and stay; each
stand-in acts only while jit() has work (a scope open on some thread, work recorded, a launch
queued), and those that record only on a thread with a scope open. Otherwise MXNet's own code
runs. (MINPY_JIT=0 from process start, which installs nothing, is in test_diagnostics.py.)"""
import os
import sys
import threading
import types

import mxnet as mx
import mxnet.base
import mxnet.ndarray.register as mx_register
import numpy as np
import pytest
from mxnet import nd

import minpy_jit
from minpy_jit import intercept, optimizers
from conftest import arr, rand, run_threads

pytestmark = pytest.mark.usefixtures("isolated_runtime")

MXNET_DIR = os.path.dirname(mx.__file__)
MXNET_ADAGRAD_UPDATE = optimizers._REAL_UPDATE.__code__


def assert_all_in_and_idle():
    """Installed (every mxnet module's _LIB is the guard), with nothing for the hooks to do."""
    assert intercept.hooks_installed() and not intercept.hooks_active()
    assert minpy_jit._core.open_scopes() == 0 and minpy_jit._core.pending() == 0
    assert mx_register._imperative_invoke is minpy_jit._core.invoke
    for name, mod in list(sys.modules.items()):
        if name.startswith("mxnet") and hasattr(mod, "_LIB"):
            assert mod._LIB is intercept._PROXY, name


def mxnet_code_run(fn):
    """fn() on this thread; returns (its result, the code objects of mxnet's Python it ran)."""
    seen = set()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(MXNET_DIR):
            seen.add(frame.f_code)
    sys.setprofile(hook)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, seen


def adagrad_and_ops(x, g):
    w, h = x.copy(), nd.zeros(x.shape)
    mx.optimizer.AdaGrad(learning_rate=0.1, wd=0.01).update(0, w, g, h)
    return [w, h, nd.relu(x * 1.5 - 0.2)]


def test_eager_work_on_another_thread_while_a_scope_is_open_stays_eager():
    """Thread A holds a scope open with recorded work; thread B, with no scope, runs an AdaGrad
    update and ops meanwhile: MXNet's own update (not the recorded kernel) and MXNet's invoke,
    nothing recorded for B, values bit for bit eager's; A's scope goes on recording after."""
    x, g = arr(rand(4, 5, seed=1)), arr(rand(4, 5, seed=2))
    want = [a.asnumpy() for a in adagrad_and_ops(x, g)]
    want_a = ((nd.tanh(x) * 2) + 1).asnumpy()
    minpy_jit.reset_stats()
    a_recorded, b_done = threading.Event(), threading.Event()
    got_a, got_b = [], []

    def scope_thread():
        with minpy_jit.jit():
            z = nd.tanh(x) * 2
            a_recorded.set()
            assert b_done.wait(30)
            z = z + 1
        got_a.append(z.asnumpy())

    def eager_thread():
        assert a_recorded.wait(30)
        assert intercept.hooks_active() and minpy_jit._core.depth() == 0
        out, code = mxnet_code_run(lambda: adagrad_and_ops(x, g))
        got_b.append(([a.asnumpy() for a in out], code))
        b_done.set()

    run_threads(scope_thread, eager_thread)
    values, code = got_b[0]
    assert MXNET_ADAGRAD_UPDATE in code and intercept._REAL_INVOKE.__code__ in code
    for w, v in zip(want, values):
        assert w.tobytes() == v.tobytes()
    assert got_a[0].tobytes() == want_a.tobytes()
    assert minpy_jit.stats()["ops_recorded"] == 3  # A's tanh, *2, +1
    assert_all_in_and_idle()


def test_adagrad_in_a_scope_still_records_the_kernel():
    """The same update on the thread with the scope: the stand-in records one kernel call."""
    x, g = arr(rand(4, 5, seed=3)), arr(rand(4, 5, seed=4))
    want = [a.asnumpy() for a in adagrad_and_ops(x, g)]
    with minpy_jit.jit():
        out, code = mxnet_code_run(lambda: adagrad_and_ops(x, g))
    assert MXNET_ADAGRAD_UPDATE not in code and "_minpy_multi_adagrad_update" in minpy_jit.last_graph()
    for w, v in zip(want, out):
        assert w.tobytes() == v.asnumpy().tobytes()


def test_threads_keep_their_own_scopes():
    """Scopes opened and closed on one thread while another keeps its own open: the other's ops
    are still recorded after, and both equal eager."""
    x = arr(rand(3, 4, seed=5))
    minpy_jit.reset_stats()
    a_open, b_done = threading.Event(), threading.Event()
    got = {}

    def long_scope():
        with minpy_jit.jit():
            y = nd.sigmoid(x)
            a_open.set()
            assert b_done.wait(30)
            y = y * 3
            assert minpy_jit._core.depth() == 1 and intercept.hooks_active()
        got["a"] = y.asnumpy()

    def short_scopes():
        assert a_open.wait(30)
        for _ in range(3):
            with minpy_jit.jit():
                z = nd.exp(x) - 1
            got.setdefault("b", []).append(z.asnumpy())
        b_done.set()

    run_threads(long_scope, short_scopes)
    assert got["a"].tobytes() == (nd.sigmoid(x) * 3).asnumpy().tobytes()
    for z in got["b"]:
        np.testing.assert_allclose(z, (nd.exp(x) - 1).asnumpy(), rtol=1e-6, atol=1e-6)  # fused exp
    assert minpy_jit.stats()["ops_recorded"] == 2 + 3 * 2
    assert_all_in_and_idle()


def test_an_error_in_a_scope_leaves_the_hooks_consistent():
    """An exception out of a block (Python's, and MXNet's error from an op) leaves the hooks in,
    idle, and the next eager ops through MXNet's own code; what the block recorded ran."""
    x = arr(rand(3, 3, seed=6))
    y = None
    with pytest.raises(ZeroDivisionError):
        with minpy_jit.jit():
            y = x * 2
            1 / 0
    assert_all_in_and_idle()
    assert y.asnumpy().tobytes() == (x * 2).asnumpy().tobytes()
    with pytest.raises(mx.base.MXNetError):
        with minpy_jit.jit():
            y = x + 1
            nd.dot(x, nd.ones((4, 2)))
    assert_all_in_and_idle()
    assert y.asnumpy().tobytes() == (x + 1).asnumpy().tobytes()
    out, code = mxnet_code_run(lambda: nd.relu(x))
    assert intercept._REAL_INVOKE.__code__ in code
    assert out.asnumpy().tobytes() == np.maximum(x.asnumpy(), 0).tobytes()


def test_mxnet_module_imported_after_the_hooks_is_guarded_at_the_next_scope():
    """A module holding MXNet's raw _LIB, imported after the hooks went in, gets the guard when
    the next scope opens (so its C API calls flush pending work too)."""
    with minpy_jit.jit():
        pass
    late = types.ModuleType("mxnet._minpy_jit_late_import")
    late._LIB = intercept._REAL_LIB
    sys.modules[late.__name__] = late
    try:
        with minpy_jit.jit():
            assert late._LIB is intercept._PROXY
        assert_all_in_and_idle()
    finally:
        del sys.modules[late.__name__]


def test_uninstall_puts_mxnet_back_and_the_next_scope_reinstalls():
    x = arr(rand(2, 3, seed=7))
    with minpy_jit.jit():
        assert not intercept.uninstall()  # a scope is open: nothing done
        y = x * 4
    assert intercept.uninstall()
    assert not intercept.hooks_installed()
    assert mx_register._imperative_invoke is intercept._REAL_INVOKE and mxnet.base._LIB is intercept._REAL_LIB
    with minpy_jit.jit():
        z = y - 1
    assert_all_in_and_idle()
    assert z.asnumpy().tobytes() == (x * 4 - 1).asnumpy().tobytes()
