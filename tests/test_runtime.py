"""Runtime behaviour of minpy_jit, always checked against the same code run eagerly.

Covers: every user-reachable flush cause, the executor cache (hits, keys, eviction),
liveness (dead intermediates are not graph outputs), thread isolation, nested scopes
and exact restoration of MXNet, error handling, config knobs, every data-access path
on arrays produced inside a still-open scope, stats(), and MINPY_JIT=0.

No expected number is hard-coded: expected values come from eager MXNet runs of the
same function (conftest.run_both / run_eager), expected counts from stats() deltas.
Tests that open their own jit() scope do so on their own source line, because the
runtime counts compiled graphs per scope site (recompile_limit).
"""
import contextlib
import io
import json
import os
import pickle
import queue
import sys
import threading
import traceback
import types

import mxnet as mx
import mxnet.base
import mxnet.ndarray.register as mx_register
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.base import MXNetError

import minpy_jit
from minpy_jit import OpInputError, intercept

from conftest import arr, assert_same, rand, run_both, run_eager, run_threads

THIS_FILE = os.path.abspath(__file__)


# ------------------------------------------------------------------ helpers


def flushes():
    return minpy_jit.stats()["flushes"]


def here():
    """Line number of the caller's current line."""
    return sys._getframe(1).f_lineno


def graph_outputs(ir):
    """Number of outputs of a graph printout (its `return ...` line)."""
    ret = [ln for ln in ir.splitlines() if ln.strip().startswith("return")]
    assert len(ret) == 1, ir
    return len(ret[0].strip()[len("return"):].split(","))


def assert_mxnet_restored():
    """Nothing left active, and the hooks all in or all out: every mxnet module's _LIB is the
    guard (installed: it passes calls straight to MXNet now) or every one is MXNet's own."""
    assert not intercept.hooks_active()
    installed = intercept.hooks_installed()
    assert mx_register._imperative_invoke is (minpy_jit._core.invoke if installed else intercept._REAL_INVOKE)
    lib = intercept._PROXY if installed else intercept._REAL_LIB
    assert mxnet.base._LIB is lib
    for name, mod in list(sys.modules.items()):
        if name.startswith("mxnet") and hasattr(mod, "_LIB"):
            assert mod._LIB is lib, name


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    """Each test starts with zeroed stats and leaves config and MXNet as it found them."""
    yield
    assert_mxnet_restored()


@pytest.fixture(scope="module")
def net():
    """A hybridized Dense block, initialised and warmed up eagerly (its CachedOp exists)."""
    mx.random.seed(11)
    blk = gluon.nn.Dense(3, in_units=5)
    blk.initialize(mx.init.Xavier())
    blk.hybridize()
    blk(nd.ones((2, 5))).wait_to_read()
    return blk


# ------------------------------------------------------------------ flush causes
# Each case: (cause expected in stats()['flushes'], fn(x, env) -> results).
# fn runs once eagerly and once inside jit(); the trigger happens with ops pending.

def _scope_exit(x, env):
    return nd.relu(x * 2 + 1) - x


def _asnumpy(x, env):
    y = nd.tanh(x * 3)
    return y.asnumpy(), y + 1


def _asscalar(x, env):
    s = (x * x).sum()
    return np.float32(s.asscalar()), s


def _print(x, env):
    y = x * 2 - 1
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print(y)
    return buf.getvalue(), repr(y + 1), y


def _bool(x, env):
    s = (x * 5).sum()
    return bool(s > 0), bool(s < 0), s


def _wait_to_read(x, env):
    y = nd.exp(x) * 2
    y.wait_to_read()
    return y


def _waitall(x, env):
    y = nd.sigmoid(x) + x
    nd.waitall()
    return y


def _backward(x, env):
    x.attach_grad()
    with autograd.record():
        loss = (nd.tanh(x * 3) * x).sum()
    loss.backward()
    return loss, x.grad


def _attach_grad(x, env):
    y = x * 2 + 1
    y.attach_grad()
    with autograd.record():
        z = (y * y).sum()
    z.backward()
    return y, z, y.grad


def _reshape_view(x, env):
    y = x * 3
    r = y.reshape((-1,))
    return r, y


def _slice_view(x, env):
    y = x - 0.5
    return y[1:3], y


def _index_view(x, env):
    y = x * x
    return y[2], y


def _write_from_numpy(x, env):
    y = x * 2
    z = y + 1  # reads the old value of y
    y[:] = np.full(y.shape, 3.0, dtype=np.float32)
    w = y * z
    return y, z, w


def _pickle(x, env):
    y = nd.relu(x) * 4
    return pickle.loads(pickle.dumps(y)), y


def _nd_save(x, env):
    y = x * 7
    nd.save(env.path("save"), [y])
    return nd.load(env.path("save"))[0], y


def _hybridized_block(x, env):
    y = x * 2
    return env.net(y), y


def _eager_op_boolean_mask(x, env):
    keep = nd.array([1, 0, 1, 1, 0, 1])  # before any op: nothing pending yet
    y = x * 2
    return nd.contrib.boolean_mask(y, keep), y


def _random_seed(x, env):
    y = x * 2
    mx.random.seed(1234)
    r = nd.random.uniform(shape=x.shape) + y
    return r, y


def _read_grad(x, env):
    x.attach_grad()
    y = x * 2
    g = x.grad
    return y, g


def test_reading_grad_needs_no_flush():
    """x.grad hands out the gradient buffer; nothing pending changes which buffer that is (a lazy
    result has none, attach_grad flushes), so it does not cut the trace."""
    res = run_both(_read_grad, arr(rand(6, 5, seed=1)), None)
    assert res.stats["flushes"] == {"attach_grad": 1, "scope exit": 1}, res.stats["flushes"]
    assert_same(res.eager, res.jitted)


def _autograd_state_changed(x, env):
    y = x * 2
    with autograd.record():
        z = y * 3
    return y, z


def _explicit_flush(x, env):
    y = x * 2
    minpy_jit.flush()
    return y, y + 1


def _other_c_api_load(x, env):
    nd.save(env.path("load"), [nd.ones((2, 2))])  # before any op: nothing pending yet
    y = x * 2
    loaded = nd.load(env.path("load"))[0]
    return y, loaded


def _other_c_api_detach(x, env):
    y = x * 2
    return y.detach(), y


def _inplace_update_of_pending(x, env):
    mean, var = nd.zeros((4,)), nd.ones((4,))  # recorded ops: pending aux states
    gamma, beta = nd.ones((4,)), nd.zeros((4,))
    y = nd.BatchNorm(nd.slice_axis(x, axis=1, begin=0, end=4) * 2, gamma, beta, mean, var)
    return y, mean, var


FLUSH_CASES = {
    "scope exit": ("scope exit", _scope_exit),
    "asnumpy": ("asnumpy", _asnumpy),
    "asscalar": ("asnumpy", _asscalar),
    "print": ("asnumpy", _print),
    "bool": ("asnumpy", _bool),
    "wait_to_read": ("wait_to_read", _wait_to_read),
    "waitall": ("waitall", _waitall),
    "backward": ("backward", _backward),
    "attach_grad": ("attach_grad", _attach_grad),
    "reshape view": ("reshape view", _reshape_view),
    "slice view": ("slice view", _slice_view),
    "index view": ("index view", _index_view),
    "write from numpy": ("write from numpy", _write_from_numpy),
    "pickle": ("pickle", _pickle),
    "nd.save": ("nd.save", _nd_save),
    "hybridized block": ("hybridized block", _hybridized_block),
    "eager op boolean_mask": ("eager op _contrib_boolean_mask", _eager_op_boolean_mask),
    "random seed": ("random seed", _random_seed),
    "autograd state changed": ("autograd state changed", _autograd_state_changed),
    "explicit flush": ("explicit flush", _explicit_flush),
    "other C API (nd.load)": ("MXNDArrayLoad", _other_c_api_load),
    "other C API (detach)": ("detach", _other_c_api_detach),
    "in-place update of pending": ("in-place update of a pending array by BatchNorm", _inplace_update_of_pending),
}


@pytest.mark.parametrize("case", sorted(FLUSH_CASES))
def test_flush_cause(case, net, tmp_path):
    cause, fn = FLUSH_CASES[case]
    env = types.SimpleNamespace(net=net, path=lambda n: str(tmp_path / n))
    res = run_both(fn, arr(rand(6, 5, seed=1)), env)
    assert res.stats["flushes"].get(cause, 0) >= 1, (cause, res.stats["flushes"])
    assert res.stats["ops_recorded"] >= 1
    assert_same(res.eager, res.jitted)


def test_flush_cause_values_read_inside_scope_see_later_writes():
    """A flush mid-scope must not freeze arrays: later in-place writes still land."""
    def fn(x):
        y = x * 2
        first = y.asnumpy().copy()
        y += 1
        x[:] = 0  # write into an input after reads were recorded
        return first, y, x
    res = run_both(fn, arr(rand(3, 4, seed=2)))
    assert res.stats["flushes"].get("asnumpy", 0) >= 1
    assert_same(res.eager, res.jitted)


# ------------------------------------------------------------------ cache

def _cache_body(x, w):
    h = nd.relu(nd.dot(x, w) + 0.25)
    return nd.tanh(h * 0.5).sum(axis=1)


def test_cache_hit_on_repeat():
    xs = [rand(7, 11, seed=s) for s in (3, 4)]
    w = rand(11, 13, seed=5)
    results = []
    for a in xs:  # the same code twice, the second time on different arrays of the same shapes
        x, wn = arr(a), arr(w)
        before = minpy_jit.stats()
        with minpy_jit.jit():
            out = _cache_body(x, wn)
        after = minpy_jit.stats()
        results.append((before, after, out, minpy_jit.events()[-1]))
    (b0, a0, out0, ev0), (b1, a1, out1, ev1) = results
    assert a0["cache_misses"] - b0["cache_misses"] == 1
    assert a0["cache_hits"] == b0["cache_hits"]
    assert a1["cache_hits"] - b1["cache_hits"] == 1
    assert a1["cache_misses"] == b1["cache_misses"]
    assert ev1["hit"] and not ev0["hit"] and ev0["key"] == ev1["key"]
    assert_same(run_eager(_cache_body, arr(xs[0]), arr(w)), out0)
    assert_same(run_eager(_cache_body, arr(xs[1]), arr(w)), out1)


def test_cache_keys_distinct_for_shapes_and_dtypes():
    variants = [  # (x shape, w shape, dtype)
        ((9, 3), (3, 6), np.float32),
        ((10, 3), (3, 6), np.float32),   # new input shape
        ((9, 3), (3, 6), np.float64),    # new dtype
        ((9, 3), (3, 6), np.float32),    # same as the first, different arrays: hit
    ]
    keys = []
    for i, (xs, ws, dt) in enumerate(variants):
        a, w = rand(*xs, seed=20 + i, dtype=dt), rand(*ws, seed=40 + i, dtype=dt)
        xa, wa = arr(a), arr(w)
        before = minpy_jit.stats()
        with minpy_jit.jit():
            out = _cache_body(xa, wa)
        after = minpy_jit.stats()
        hit = after["cache_hits"] - before["cache_hits"]
        miss = after["cache_misses"] - before["cache_misses"]
        keys.append(minpy_jit.events()[-1]["key"])
        if i < 3:
            assert (hit, miss) == (0, 1), (i, hit, miss)
        else:
            assert (hit, miss) == (1, 0), (i, hit, miss)
        assert_same(run_eager(_cache_body, arr(a), arr(w)), out)
    assert len(set(keys[:3])) == 3 and keys[3] == keys[0]


def test_cache_hit_with_different_data_same_structure():
    """Same structure, different data (not only different objects): still a hit, right values."""
    a, b = rand(5, 5, seed=7), rand(5, 5, seed=8) * 100
    outs = []
    for data in (a, b):
        x = arr(data)
        before = minpy_jit.stats()["cache_hits"]
        with minpy_jit.jit():
            y = nd.sigmoid(x * x - x)
        outs.append((y, minpy_jit.stats()["cache_hits"] - before))
    assert outs[1][1] == 1
    assert_same(run_eager(lambda x: nd.sigmoid(x * x - x), arr(b)), outs[1][0])


def test_changed_scalar_attribute_never_reuses_stale_graph():
    x = arr(rand(4, 6, seed=43))
    for scale in (1.5, 2.5, 1.5, -3.0):
        with minpy_jit.jit():
            y = nd.relu(x * scale - 0.25) + scale
        assert_same(run_eager(lambda x: nd.relu(x * scale - 0.25) + scale, x), y)


# ------------------------------------------------------------------ liveness

def test_dead_intermediates_are_not_outputs(mxnet_kernels):
    x = arr(rand(6, 6, seed=9))
    with minpy_jit.jit():
        out = nd.relu(nd.tanh(x * 2 + 1) * 3 - 0.5).sum(axis=0)
    ir = minpy_jit.last_graph()
    assert graph_outputs(ir) == 1, ir
    g = minpy_jit.graphs()[0]
    assert g["ir"] == ir and g["nodes"] >= 5
    assert_same(run_eager(lambda x: nd.relu(nd.tanh(x * 2 + 1) * 3 - 0.5).sum(axis=0), x), out)


def test_live_intermediates_are_materialized():
    def fn(x):
        a = x * 2
        b = nd.tanh(a + 1)
        out = nd.relu(b * 3 - 0.5).sum(axis=0)
        return a, b, out
    x = arr(rand(6, 6, seed=10))
    with minpy_jit.jit():
        a, b, out = fn(x)
        dead = nd.exp(nd.sin(a) * 2) + 1  # intermediates of this line are dead
    ir = minpy_jit.last_graph()
    assert graph_outputs(ir) == 4, ir  # a, b, out, dead
    ea, eb, eout = run_eager(fn, x)
    assert_same((ea, eb, eout, nd.exp(nd.sin(ea) * 2) + 1), (a, b, out, dead))


def test_deleted_intermediate_is_dropped():
    x = arr(rand(4, 4, seed=12))
    with minpy_jit.jit():
        a = x * 2
        b = a + 1
        c = b * b
        del a, b
    assert graph_outputs(minpy_jit.last_graph()) == 1
    assert_same(run_eager(lambda x: (x * 2 + 1) * (x * 2 + 1), x), c)


# ------------------------------------------------------------------ threads

def _work_a(x):
    for _ in range(25):
        x = nd.relu(x * 1.01 + 0.5) - 0.1
    return x


def _work_b(x):
    seen = []
    for _ in range(25):
        x = nd.tanh(x * 0.9) + 0.2
        seen.append(x.asnumpy())
    return x, seen



def test_thread_isolation_jit_and_eager_concurrently():
    A, B = rand(8, 8, seed=13), rand(8, 8, seed=14)
    exp_a = run_eager(_work_a, arr(A))
    exp_b, exp_seen = run_eager(_work_b, arr(B))
    # how many ops thread A records on its own
    minpy_jit.reset_stats()
    xa = arr(A)
    with minpy_jit.jit():
        _work_a(xa)
    ops_a = minpy_jit.stats()["ops_recorded"]

    minpy_jit.reset_stats()
    barrier = threading.Barrier(2)
    res = {}
    xa, xb = arr(A), arr(B)

    def thread_a():
        with minpy_jit.jit():
            barrier.wait()
            res["a"] = _work_a(xa)
            barrier.wait()  # thread B ran while this scope was open

    def thread_b():
        barrier.wait()
        res["b"], res["seen"] = _work_b(xb)
        barrier.wait()

    run_threads(thread_a, thread_b)
    assert minpy_jit.stats()["ops_recorded"] == ops_a
    assert_same(exp_a, res["a"])
    assert_same((exp_b, exp_seen), (res["b"], res["seen"]))


def test_two_jit_threads_concurrently():
    A, B = rand(8, 8, seed=15), rand(8, 8, seed=16)
    exp_a, exp_b = run_eager(_work_a, arr(A)), run_eager(lambda x: _work_b(x)[0], arr(B))
    res = {}
    barrier = threading.Barrier(2)
    xa, xb = arr(A), arr(B)

    def thread_a():
        with minpy_jit.jit():
            barrier.wait()
            res["a"] = _work_a(xa)

    def thread_b():
        with minpy_jit.jit():
            barrier.wait()
            res["b"] = _work_b(xb)[0]

    run_threads(thread_a, thread_b)
    assert_same((exp_a, exp_b), (res["a"], res["b"]))


def test_array_made_in_jit_thread_read_in_other_thread():
    A = rand(8, 8, seed=17)
    expected = run_eager(_work_a, arr(A))
    handoff, done, res = queue.Queue(), threading.Event(), {}
    xa = arr(A)

    def producer():
        with minpy_jit.jit():
            y = _work_a(xa)
            handoff.put(y)
            assert done.wait(30)
            res["y_after"] = y * 1  # keep working in the scope after the other thread read y
        res["y"] = y

    def consumer():
        y = handoff.get(timeout=30)
        res["read"] = y.asnumpy()
        res["read_nd"] = y[2:4].asnumpy()
        done.set()

    run_threads(producer, consumer)
    assert_same(expected.asnumpy(), res["read"])
    assert_same(expected[2:4].asnumpy(), res["read_nd"])
    assert_same(expected, res["y"])
    assert_same(expected, res["y_after"])
    assert any("another thread" in c for c in flushes()), flushes()


def test_cross_thread_flush_in_lockstep():
    """Thread B (eager) reads its own arrays while thread A has ops pending: B's reads flush
    A's trace, B's ops are never recorded, and both threads' values equal eager."""
    A, B = rand(6, 6, seed=41), rand(6, 6, seed=42)

    def step_a(x, i):
        return nd.relu(x * 1.1 - 0.05 * i) + 0.01

    def step_b(x, i):
        x = nd.tanh(x * 0.9) + 0.1 * i
        x[0:2] += 1
        return x

    ea, eb = arr(A), arr(B)
    exp_a, exp_b, exp_b_seen = [], [], []
    for i in range(6):
        ea = step_a(ea, i)
        exp_a.append(ea)
        eb = step_b(eb, i)
        exp_b_seen.append(eb.asnumpy())
    exp_b = eb

    to_b, to_a, res = threading.Event(), threading.Event(), {"a": [], "b_seen": []}
    xa, xb = arr(A), arr(B)

    def thread_a():
        x = xa
        with minpy_jit.jit():
            for i in range(6):
                x = step_a(x, i)  # pending while B runs
                res["a"].append(x)
                to_b.set()
                assert to_a.wait(30)
                to_a.clear()
            res["ops_a"] = minpy_jit.stats()["ops_recorded"]

    def thread_b():
        x = xb
        for i in range(6):
            assert to_b.wait(30)
            to_b.clear()
            x = step_b(x, i)
            res["b_seen"].append(x.asnumpy())
            to_a.set()
        res["b"] = x

    minpy_jit.reset_stats()
    run_threads(thread_a, thread_b)
    st = minpy_jit.stats()
    assert st["ops_recorded"] == res["ops_a"]
    assert any("another thread" in c for c in st["flushes"]), st["flushes"]
    assert_same(exp_a, res["a"])
    assert_same((exp_b, exp_b_seen), (res["b"], res["b_seen"]))

    # how many ops the same work records with no other thread around: B added none
    minpy_jit.reset_stats()
    x = arr(A)
    with minpy_jit.jit():
        for i in range(6):
            x = step_a(x, i)
    assert minpy_jit.stats()["ops_recorded"] == res["ops_a"]


_STRESS = r"""
import sys, threading
import numpy as np, mxnet as mx
from mxnet import nd
import minpy_jit
minpy_jit.config(recompile_limit=10 ** 9)
sys.setswitchinterval(1e-6)  # make the GIL change hands as often as possible
A = np.random.RandomState(0).rand(8, 8).astype(np.float32)
def work_a(x):
    for i in range(50):
        x = nd.relu(x * 1.01 + 0.5) - 0.1
    return x
def work_b(x):
    seen = []
    for i in range(50):
        x = nd.tanh(x * 0.9) + 0.2
        seen.append(x.asnumpy())
    return x, seen
exp_a = work_a(nd.array(A)).asnumpy()
exp_b, exp_seen = work_b(nd.array(A))
bad = 0
for trial in range(int(sys.argv[1])):
    res = {}
    def ta():
        with minpy_jit.jit():
            res["a"] = work_a(nd.array(A))
    def tb():
        res["b"] = work_b(nd.array(A))
    ts = [threading.Thread(target=ta), threading.Thread(target=tb)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    ok = np.array_equal(res["a"].asnumpy(), exp_a) and np.array_equal(res["b"][0].asnumpy(), exp_b.asnumpy())
    ok = ok and all(np.array_equal(p, q) for p, q in zip(res["b"][1], exp_seen))
    bad += not ok
print("BAD", bad, "FLUSHES", minpy_jit.stats()["flushes"])
"""


def test_jit_thread_and_eager_thread_with_forced_gil_switching():
    """Same as the isolation test, with the GIL switching every microsecond so the eager
    thread's C API calls land while the jit thread is inside the recorder. Runs in a
    subprocess so that a crash is reported as a failure instead of killing pytest."""
    import subprocess
    proc = subprocess.run([sys.executable, "-c", _STRESS, "60"], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(THIS_FILE))
    tail = (proc.stdout + proc.stderr)[-2000:]
    assert proc.returncode == 0, "crashed (rc=%d): %s" % (proc.returncode, tail)
    assert "BAD 0 " in proc.stdout, tail


# ------------------------------------------------------------------ nesting and restoration

def test_nested_scopes_flush_once_at_outer_exit():
    def fn(x):
        y = x * 2
        z = nd.relu(y - 0.3)
        w = z * z + y
        return y, z, w
    x = arr(rand(5, 4, seed=18))
    assert_mxnet_restored()
    with minpy_jit.jit():
        y = x * 2
        with minpy_jit.jit():
            z = nd.relu(y - 0.3)
        assert flushes() == {}
        assert intercept.hooks_active()
        w = z * z + y
        assert flushes() == {}
    assert flushes() == {"scope exit": 1}
    assert minpy_jit.stats()["executions"] + minpy_jit.stats()["eager_replays"] == 1
    assert_mxnet_restored()
    assert_same(run_eager(fn, x), (y, z, w))


def test_nested_decorator_inside_scope():
    @minpy_jit.jit()
    def inner(a):
        return nd.sigmoid(a) * 3

    x = arr(rand(4, 4, seed=19))
    with minpy_jit.jit():
        y = inner(x * 2)
        assert flushes() == {}
        z = inner(y)
    assert flushes() == {"scope exit": 1}
    assert_mxnet_restored()
    expected = run_eager(lambda x: (nd.sigmoid(x * 2) * 3, nd.sigmoid(nd.sigmoid(x * 2) * 3) * 3), x)
    assert_same(expected, (y, z))


def test_hooks_act_only_inside_scope():
    assert_mxnet_restored()
    with minpy_jit.jit():
        assert intercept.hooks_active() and intercept.hooks_installed()
        assert mx_register._imperative_invoke is not intercept._REAL_INVOKE
        assert mxnet.base._LIB is not intercept._REAL_LIB
        y = nd.ones((2, 2)) * 3
    assert_mxnet_restored()
    with pytest.raises(ZeroDivisionError):
        with minpy_jit.jit():
            y = y * 2
            1 / 0
    assert_mxnet_restored()
    assert_same(run_eager(lambda: nd.ones((2, 2)) * 6), y)


# ------------------------------------------------------------------ errors

def test_op_input_error_dot_raised_at_recording_line():
    a, b = arr(rand(2, 3, seed=21)), arr(rand(4, 5, seed=22))
    ran = []
    with pytest.raises(OpInputError) as ei:
        with minpy_jit.jit():
            before = a * 2
            line = here() + 1
            nd.dot(a, b)
            ran.append("after")
    assert ran == []
    assert isinstance(ei.value, MXNetError)
    frames = [f for f in traceback.extract_tb(ei.tb) if os.path.abspath(f.filename) == THIS_FILE]
    assert frames[-1].lineno == line, frames
    msg = str(ei.value)
    assert "dot" in msg and "(2, 3)" in msg and "(4, 5)" in msg, msg
    assert_same(run_eager(lambda a: a * 2, a), before)
    assert_mxnet_restored()


@pytest.mark.parametrize("cond_shape", [(3, 4), (4,), (2, 4)], ids=["full", "first-axis-mismatch", "rows"])
def test_where_condition_shape_checked_as_eager(cond_shape):
    """where's shape function refuses a condition that is neither the data's shape nor a 1-d
    selector of its first axis by returning false: eager MXNet raises at the call, and the
    symbolic pass took it as complete once every shape was set (the recorded op's kernel then
    killed the process with SIGFPE when it ran, for a (3, 4) condition with (1, 4) data)."""
    cond = arr((rand(*cond_shape, seed=31) > 0).astype(np.float32))
    x, y = arr(rand(1, 4, seed=32)), arr(rand(1, 4, seed=33))
    with pytest.raises(MXNetError):
        nd.where(cond, x, y).wait_to_read()
    with pytest.raises(OpInputError) as ei:
        with minpy_jit.jit():
            line = here() + 1
            nd.where(cond, x * 1, y)
    frames = [f for f in traceback.extract_tb(ei.tb) if os.path.abspath(f.filename) == THIS_FILE]
    assert frames[-1].lineno == line
    msg = str(ei.value)
    assert "where" in msg and str(cond_shape) in msg and "(1, 4)" in msg, msg


def test_where_with_a_first_axis_selector_is_recorded():
    cond = arr(np.array([1, 0, 1], np.float32))
    x, y = arr(rand(3, 4, seed=34)), arr(rand(3, 4, seed=35))
    want = run_eager(lambda c, a, b: nd.where(c, a * 2, b), cond, x, y)
    with minpy_jit.jit():
        got = nd.where(cond, x * 2, y)
    assert_same(want, got)
    assert minpy_jit.stats()["fallbacks"] == {}, minpy_jit.stats()


def test_op_input_error_broadcast_add():
    x, y = arr(rand(2, 3, seed=23)), arr(rand(4, 3, seed=24))
    ran = []
    with pytest.raises(OpInputError) as ei:
        with minpy_jit.jit():
            line = here() + 1
            nd.broadcast_add(x * 1, y)
            ran.append("after")
    assert ran == []
    frames = [f for f in traceback.extract_tb(ei.tb) if os.path.abspath(f.filename) == THIS_FILE]
    assert frames[-1].lineno == line
    msg = str(ei.value)
    assert "broadcast_add" in msg and "(2, 3)" in msg and "(4, 3)" in msg, msg
    # eager MXNet rejects the same call too
    with pytest.raises(MXNetError):
        nd.broadcast_add(x, y).wait_to_read()


def _inplace_then_fail(a, b, c, fail):
    a += 1
    b[:] = a * 2
    c[:, 1] = 7
    nd.elemwise_add(a, c, out=c)
    d = a * 3
    a *= 2
    if fail == "op":
        nd.dot(a, nd.ones((4, 5)))
    elif fail == "python":
        raise KeyError("user error")
    a += 100
    return d


@pytest.mark.parametrize("fail", ["op", "python"])
def test_exception_keeps_array_values(fail):
    A, B, C, D = (rand(2, 3, seed=s) for s in (25, 26, 27, 28))
    ea, eb, ec = arr(A), arr(B), arr(C)
    with pytest.raises((MXNetError, KeyError)):
        _inplace_then_fail(ea, eb, ec, fail)
        nd.waitall()
    untouched, ja, jb, jc = arr(D), arr(A), arr(B), arr(C)
    untouched_np = untouched.asnumpy().copy()
    pending_read = None
    with pytest.raises(OpInputError if fail == "op" else KeyError):
        with minpy_jit.jit():
            pending_read = untouched * 2
            _inplace_then_fail(ja, jb, jc, fail)
    assert_mxnet_restored()
    assert_same((ea, eb, ec), (ja, jb, jc))
    np.testing.assert_array_equal(untouched.asnumpy(), untouched_np)
    assert_same(run_eager(lambda u: u * 2, untouched), pending_read)

    # jit() keeps working afterwards, with cache hits
    x = arr(rand(3, 3, seed=29))
    hits = []
    for _ in range(2):
        before = minpy_jit.stats()
        with minpy_jit.jit():
            y = nd.relu(x * 2 - 0.5) + x
        after = minpy_jit.stats()
        hits.append((after["cache_hits"] - before["cache_hits"], after["cache_misses"] - before["cache_misses"]))
        assert_same(run_eager(lambda x: nd.relu(x * 2 - 0.5) + x, x), y)
    assert hits[1] == (1, 0), hits


def test_execution_error_keeps_independent_inplace_writes():
    """An op that passes shape inference but fails when it runs (potrf of a matrix that is
    not positive definite): eager MXNet still runs the independent in-place writes recorded
    around it, so after the error `a` holds (A + 1) * 3 -- and so it does under jit() (README,
    "Errors"); later jit() use works."""
    M = np.array([[1.0, 2.0], [2.0, 1.0]], dtype=np.float32)

    def fn(a, m):
        a += 1
        chol = nd.linalg.potrf(m)
        a *= 3
        chol.asnumpy()  # the failure surfaces here, eagerly and under jit()
        a += 100  # never reached

    ea, em = arr(M), arr(M)
    with pytest.raises(MXNetError):
        fn(ea, em)
    ja, jm = arr(M), arr(M)
    with pytest.raises(MXNetError) as ei:
        with minpy_jit.jit():
            fn(ja, jm)
    assert "potrf" in str(ei.value)
    assert_mxnet_restored()
    assert_same(ea, ja)       # the independent writes are applied, as eagerly
    assert_same(em, jm)
    with minpy_jit.jit():     # and the runtime is still usable, with the same results as eager
        ja += 1
    assert_same(ea + 1, ja)


def test_exception_after_flush_mid_scope_keeps_values():
    A = rand(3, 3, seed=30)
    ea, ja = arr(A), arr(A)

    def fn(a):
        a += 1
        a.asnumpy()
        a *= 3
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        fn(ea)
    with pytest.raises(RuntimeError):
        with minpy_jit.jit():
            fn(ja)
    assert_same(ea, ja)


@pytest.mark.parametrize("out_shape,out_dtype", [((3, 2), "float32"), ((1, 3), "float32"), ((2, 3), "float64")])
def test_out_with_wrong_shape_or_dtype_raises(out_shape, out_dtype):
    x = arr(rand(2, 3, seed=31))
    out = nd.zeros(out_shape, dtype=out_dtype)
    out_before = out.asnumpy().copy()
    ran = []
    with pytest.raises(MXNetError) as ei:
        with minpy_jit.jit():
            nd.relu(x, out=out)
            ran.append(1)
    assert ran == []
    msg = str(ei.value)
    assert "relu" in msg and "out=" in msg and str(out_shape) in msg and "(2, 3)" in msg, msg
    np.testing.assert_array_equal(out.asnumpy(), out_before)
    assert_mxnet_restored()


# ------------------------------------------------------------------ config

def test_max_ops_cap_flushes():
    def fn(x):
        for _ in range(12):
            x = x * 1.5 - 0.25
        return x
    minpy_jit.config(max_ops=5)
    x = arr(rand(4, 4, seed=32))
    with minpy_jit.jit():
        y = fn(x)
    st = minpy_jit.stats()
    assert st["ops_recorded"] >= 12
    assert st["flushes"].get("op count cap", 0) == st["ops_recorded"] // 5, st["flushes"]
    assert_same(run_eager(fn, x), y)


def test_cache_size_evicts():
    minpy_jit.config(cache_size=2)
    outs = []
    for n in (17, 18, 19, 20):  # four distinct graphs through a cache of two
        x = arr(rand(n, 3, seed=n))
        with minpy_jit.jit():
            y = nd.sin(x) * 2 + x
        outs.append((x, y))
        assert minpy_jit.stats()["graphs_cached"] <= 2
        assert len(minpy_jit.graphs()) <= 2
    st = minpy_jit.stats()
    assert st["cache_evictions"] >= 2, st
    for x, y in outs:
        assert_same(run_eager(lambda x: nd.sin(x) * 2 + x, x), y)
    # the first graph was evicted: running it again compiles again
    x = arr(rand(17, 3, seed=99))
    before = minpy_jit.stats()["cache_misses"]
    with minpy_jit.jit():
        y = nd.sin(x) * 2 + x
    assert minpy_jit.stats()["cache_misses"] == before + 1
    assert_same(run_eager(lambda x: nd.sin(x) * 2 + x, x), y)


def test_recompile_limit_warns_and_goes_eager(capfd):
    minpy_jit.config(recompile_limit=2)
    site = None
    results = []
    for n in (21, 22, 23, 24, 25):
        x = arr(rand(n, 2, seed=n))
        before = minpy_jit.stats()["ops_recorded"]
        site = "%s:%d" % (os.path.basename(THIS_FILE), here() + 1)
        with minpy_jit.jit():
            y = nd.relu(x * 3 - 1) + x
            z = y.sum()
        results.append((x, y, z, minpy_jit.stats()["ops_recorded"] - before))
    err = capfd.readouterr().err
    assert "WARNING" in err and site in err, err
    sites = minpy_jit.stats()["sites"]
    assert sites[site]["eager"] is True, sites
    assert sites[site]["compiles"] == 3, sites  # the limit plus the one that crossed it
    # after the site went eager nothing is recorded
    assert [r[3] > 0 for r in results] == [True, True, True, False, False]
    for x, y, z, _ in results:
        assert_same(run_eager(lambda x: (nd.relu(x * 3 - 1) + x, (nd.relu(x * 3 - 1) + x).sum()), x), (y, z))


# ------------------------------------------------------------------ data access inside an open scope

def _produce(x):
    return nd.tanh(x * 2) + x


ACCESS = {
    "asnumpy": lambda y: y.asnumpy(),
    "asscalar": lambda y: np.float32(y[0, 0:1].asscalar()),
    "sum asscalar": lambda y: np.float32(y.sum().asscalar()),
    "repr": lambda y: repr(y),
    "print": lambda y: _printed(y),
    "bool one-element": lambda y: bool(y.sum() > 0.5),
    "wait_to_read": lambda y: (y.wait_to_read(), y)[1],
    "waitall": lambda y: (nd.waitall(), y)[1],
    "reshape": lambda y: y.reshape((2, -1)),
    "slice": lambda y: y[1:3],
    "index": lambda y: y[2],
    "column": lambda y: y[:, 1],
    "strided": lambda y: y[::2, 1:3],
    "pickle": lambda y: pickle.loads(pickle.dumps(y)),
    "astype": lambda y: y.astype("float64"),
    "astype int": lambda y: (y * 10).astype("int32"),
    "copy": lambda y: y.copy(),
    "copyto": lambda y: y.copyto(nd.zeros(y.shape)),
    "comparison then if": lambda y: ("pos" if (y.sum() > 0) else "neg", "big" if (y.max() > 100) else "small"),
    "len and shape": lambda y: (len(y), y.shape, y.size, str(y.dtype)),
}


def _printed(y):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print(y)
    return buf.getvalue()


@pytest.mark.parametrize("how", sorted(ACCESS))
def test_data_access_in_open_scope(how, mxnet_kernels):  # compares printed digits
    access = ACCESS[how]

    def fn(x):
        y = _produce(x)
        got = access(y)
        after = y * 2  # the scope goes on after the access
        return got, after

    res = run_both(fn, arr(rand(6, 4, seed=33)))
    assert_same(res.eager, res.jitted)


def test_nd_save_load_in_open_scope(tmp_path):
    x = arr(rand(6, 4, seed=34))
    expected = run_eager(_produce, x)
    with minpy_jit.jit():
        y = _produce(x)
        nd.save(str(tmp_path / "y.nd"), {"y": y, "y2": y * 2})
        loaded = nd.load(str(tmp_path / "y.nd"))
        z = loaded["y"] + 1
    assert flushes().get("nd.save", 0) >= 1
    assert_same({"y": expected, "y2": expected * 2}, loaded)
    assert_same(expected + 1, z)


def test_grad_after_backward_in_open_scope():
    def fn(x, w):
        w.attach_grad()
        with autograd.record():
            loss = (nd.relu(nd.dot(x, w)) ** 2).mean()
        loss.backward()
        g = w.grad
        g_np = g.asnumpy()
        w2 = w - 0.1 * g  # keep using the gradient inside the scope
        return loss, g, g_np, w2

    res = run_both(fn, arr(rand(5, 3, seed=35)), arr(rand(3, 4, seed=36)))
    assert res.stats["flushes"].get("backward", 0) >= 1
    assert_same(res.eager, res.jitted)


def test_views_under_autograd_in_open_scope():
    def fn(x):
        x.attach_grad()
        with autograd.record():
            y = nd.tanh(x * 2)
            v, r, c = y[1:3], y.reshape((-1,)), y[2]
            loss = (v * v).sum() + r.sum() * 0.5 + (c * 3).sum()
        loss.backward()
        return loss, x.grad

    res = run_both(fn, arr(rand(4, 3, seed=44)))
    assert_same(res.eager, res.jitted)


def test_results_held_across_many_flushes_stay_intact():
    """Dead intermediates are recycled between flushes; arrays the user holds must not be."""
    def fn(x):
        keep = []
        for i in range(20):
            y = nd.relu(x * (i + 1) - 0.5) + i
            z = nd.tanh(y) * 2
            if i % 3 == 0:
                keep.append(z)
            if i % 4 == 0:
                z.asnumpy()
            x = x + 0.01
        return keep, x

    res = run_both(fn, arr(rand(4, 3, seed=45)))
    assert res.stats["flushes"].get("asnumpy", 0) >= 2
    assert_same(res.eager, res.jitted)


def test_comparison_drives_python_control_flow():
    def fn(x):
        steps = 0
        while (x.abs().max() > 0.1) and steps < 20:
            x = x * 0.5
            steps += 1
        return x, steps

    res = run_both(fn, arr(rand(4, 4, seed=37) * 10))
    assert res.stats["flushes"].get("asnumpy", 0) >= 1
    assert_same(res.eager, res.jitted)


def test_tostype_keeps_storage_type():
    def fn(x, w):
        s = (x * 2).tostype("csr")
        stype = s.stype
        z = nd.sparse.dot(s, w)
        z_np = z.asnumpy()  # flush while s is still alive
        return stype, s.stype, z_np, s.tostype("default")

    res = run_both(fn, arr(np.eye(4, dtype=np.float32)), arr(rand(4, 2, seed=46)))
    assert_same(res.eager, res.jitted)


def test_a_sparse_input_runs_the_op_eagerly_and_is_counted():
    csr = nd.array(np.eye(3, dtype=np.float32)).tostype("csr")

    def fn(x, w):
        return nd.sparse.dot(x, w) * 2

    res = run_both(fn, csr, arr(rand(3, 2, seed=47)))
    assert_same(res.eager, res.jitted)
    assert res.stats["fallback_reasons"] == {"dot: sparse input": 1}, res.stats


# ------------------------------------------------------------------ stats

def test_stats_is_plain_json_dict_and_reset_zeroes():
    x = arr(rand(3, 3, seed=38))
    with minpy_jit.jit():
        y = (x * 2).sum()
        y.asnumpy()
        z = nd.contrib.boolean_mask(x, nd.array([1, 0, 1])) * 2
    st = minpy_jit.stats()
    assert type(st) is dict
    text = json.dumps(st)
    assert json.loads(text) == st
    assert st["ops_recorded"] > 0 and st["flushes"] and st["fallbacks"]
    assert json.loads(json.dumps(minpy_jit.events())) == minpy_jit.events()
    json.dumps(minpy_jit.config())
    minpy_jit.reset_stats()
    st = minpy_jit.stats()
    for k in ("ops_recorded", "cache_hits", "cache_misses", "cache_evictions", "executions",
              "eager_replays", "compile_ms"):
        assert st[k] == 0, (k, st)
    assert st["flushes"] == {} and st["fallbacks"] == {} and st["fallback_reasons"] == {}
    assert minpy_jit.events() == []
    assert_same(run_eager(lambda x: nd.contrib.boolean_mask(x, nd.array([1, 0, 1])) * 2, x), z)


# ------------------------------------------------------------------ MINPY_JIT=0

def test_minpy_jit_0_disables(monkeypatch):
    def fn(x):
        y = nd.relu(x * 2 - 0.5)
        return y, y.sum()

    x = arr(rand(4, 5, seed=39))
    expected = run_eager(fn, x)
    monkeypatch.setenv("MINPY_JIT", "0")
    with minpy_jit.jit():
        assert not intercept.hooks_active()
        got = fn(x)
    st = minpy_jit.stats()
    assert st["ops_recorded"] == 0 and st["flushes"] == {}
    assert_mxnet_restored()
    assert_same(expected, got)

    @minpy_jit.jit()
    def deco(x):
        assert not intercept.hooks_active()
        return fn(x)
    assert_same(expected, deco(x))
    assert minpy_jit.stats()["ops_recorded"] == 0


# ---------------------------------------------------------------- view detection
def test_alias_check_uses_storage_identity():
    """Views are found by their shared storage chunk, which needs no wait on pending writers.

    If a build's NDArray layout ever breaks the check, the runtime falls back to comparing
    data addresses (correct, but it waits): this test makes that fallback visible."""
    assert minpy_jit._core.alias_check() == "storage chunk"


def test_write_into_disjoint_slice_of_viewed_array_matches_eager():
    """A write through one slice and a read through another slice of the same array."""
    def fn(x):
        a, b = x[0:2], x[2:4]
        a += 1
        return b * 2, x + 0

    res = run_both(fn, arr(rand(4, 3)))
    assert_same(res.eager, res.jitted)


def test_freeing_a_cached_op_inside_a_scope_does_not_flush():
    """A CachedOp collected by the GC (a hybridized block's, say) is freed with MXFreeCachedOp. That can
    happen at any allocation, even while an op is being recorded, so it must not flush: it
    needs no pending data. (Flushing there once corrupted a half-recorded trace.)"""
    import gc

    class Holder:  # reachable only through a cycle: only the garbage collector frees it
        def __init__(self):
            data = mx.sym.var("data")
            self.op = mx.nd.CachedOp(mx.sym.relu(data))
            self.op(nd.ones((2, 2))).wait_to_read()
            self.me = self

    def make_garbage_block():
        Holder()

    def fn(x):
        make_garbage_block()
        y = x * 2 + 1
        gc.collect()  # frees the CachedOp while y is still pending
        return nd.relu(y)

    x = arr(rand(4, 4, seed=6))
    eager = run_eager(lambda v: nd.relu(v * 2 + 1), x)
    minpy_jit.reset_stats()
    with minpy_jit.jit():
        y = fn(x)
    assert "MXFreeCachedOp" not in minpy_jit.stats()["flushes"], minpy_jit.stats()["flushes"]
    assert_same(eager, y)
