"""Surprising cases of lazy evaluation, one test each: handled correctly or a clear error, never silently wrong.

Each docstring states the footgun and what minpy_jit does about it. Correct means: the same values
(shape, dtype, data) as the same code run eagerly in MXNet. Where the documented behaviour differs
from eager MXNet (an op failing while the graph runs), the test asserts the documented behaviour.
"""
import contextlib
import io
import os
import queue

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.base import MXNetError

import minpy_jit
from minpy_jit import intercept

from conftest import arr, assert_same, here, rand, run_eager, run_threads

THIS = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    yield
    assert not intercept.hooks_active()


# ------------------------------------------------------------------ Python control flow on array values

def _branchy_step(x):
    if x.sum().asscalar() > 0:
        x = x * 0.5 - 1
    else:
        x = nd.tanh(x) + 2
    return x


def test_python_branch_on_value_read_inside_block():
    """Footgun: `if x.sum().asscalar() > 0:` inside the block needs the value *now*, while the ops
    that produce x are only recorded. Behaviour: the read flushes (cause asnumpy, at the `if` line),
    Python takes the right branch every iteration, and a branch change records a different trace,
    which gets its own graph -- never the other branch's stale one."""
    x, xe = arr(rand(3, 4, seed=1) + 0.3), arr(rand(3, 4, seed=1) + 0.3)
    if_line = _branchy_step.__code__.co_firstlineno + 1
    key_of_branch = {}
    for _ in range(8):
        positive = xe.sum().asscalar() > 0
        with minpy_jit.jit():
            x = _branchy_step(x)
        xe = _branchy_step(xe)
        assert_same(xe, x)
        ev = minpy_jit.events()
        assert ev[-2]["cause"] == "asnumpy" and ev[-2]["where"] == "%s:%d" % (THIS, if_line), ev[-2:]
        key_of_branch.setdefault(positive, ev[-1]["key"])
        assert ev[-1]["key"] == key_of_branch[positive], (positive, key_of_branch, ev[-1])
    assert len(key_of_branch) == 2 and len(set(key_of_branch.values())) == 2, key_of_branch
    st = minpy_jit.stats()
    assert st["cache_hits"] >= 8, st


def test_python_scalar_read_from_array_feeds_an_op(mxnet_kernels):
    """Footgun: a value read inside the block comes back as a Python float and flows into ops as a
    scalar attribute (`x * s`), a new value every iteration. Behaviour: correct each time; the scalar
    is lifted after it changes once, so the loop stops compiling."""
    x, xe = arr(rand(4, 5, seed=2)), arr(rand(4, 5, seed=2))
    misses = []
    for _ in range(10):
        before = minpy_jit.stats()["cache_misses"]
        with minpy_jit.jit():
            s = float(nd.norm(x).asscalar())
            x = nd.tanh(x * (1.0 / s)) + s * 0.1
        misses.append(minpy_jit.stats()["cache_misses"] - before)
        s_e = float(nd.norm(xe).asscalar())
        xe = nd.tanh(xe * (1.0 / s_e)) + s_e * 0.1
        assert_same(xe, x)
    assert sum(misses[3:]) == 0, misses


# ------------------------------------------------------------------ holding intermediates

def test_holding_intermediates_across_inplace_updates():
    """Footgun: intermediates appended to a Python list stay referenced after the block, while the
    array they were computed from is updated in place afterwards (`x += h`, `x[0] = i`). Behaviour:
    every held array is a live graph output with its value from when it was computed."""
    def fn(x):
        hist = []
        for i in range(5):
            h = nd.tanh(x) * (i + 1)
            hist.append(h)
            x += h
            x[0] = i
        return hist, x

    x = arr(rand(3, 4, seed=3))
    with minpy_jit.jit():
        got = fn(x.copy())
    assert_same(run_eager(fn, x), got)


# ------------------------------------------------------------------ autograd

def test_reading_grad_inside_block_after_backward():
    """Footgun: `w.grad` is written by backward() (a C API call, not a recorded op), then read and
    used inside the same block, then overwritten by a second backward. Behaviour: backward flushes
    first, reading .grad flushes what is pending, each read sees its own step's gradient."""
    def fn(x, w):
        w.attach_grad()
        with autograd.record():
            loss = (nd.dot(x, w) ** 2).sum()
        loss.backward()
        g1 = w.grad * 1
        g1_np = w.grad.asnumpy()
        w -= 0.1 * w.grad
        with autograd.record():
            loss2 = (nd.tanh(nd.dot(x, w)) ** 2).sum()
        loss2.backward()
        return loss, g1, g1_np, loss2, w.grad, w

    x, w = arr(rand(3, 4, seed=4)), arr(rand(4, 2, seed=5))
    with minpy_jit.jit():
        got = fn(x, w.copy())
    assert_same(run_eager(fn, x, w), got)
    assert minpy_jit.stats()["flushes"].get("backward", 0) >= 2, minpy_jit.stats()["flushes"]


def test_higher_order_gradient_replayed_eagerly():
    """Footgun: autograd.grad(..., create_graph=True) needs the pending ops on MXNet's autograd tape
    with their own backward graphs, which a CachedOp does not provide. Behaviour: the pending trace
    is replayed eagerly op by op (an event with eager=True says so), and the second-order gradient
    equals eager's -- also when repeated."""
    def fn(x):
        x.attach_grad()
        with autograd.record():
            y = nd.elemwise_add(nd.sin(x), nd.tanh(x))
            (gx,) = autograd.grad([y], [x], head_grads=[nd.ones_like(x)], create_graph=True, retain_graph=True)
            z = (gx * gx).sum()
        z.backward()
        return y, gx, z, x.grad

    x = arr(rand(6, seed=6))
    for _ in range(2):
        minpy_jit.reset_stats()
        with minpy_jit.jit():
            got = fn(x.copy())
        assert_same(run_eager(fn, x), got)
        replays = [e for e in minpy_jit.events() if e["eager"]]
        assert replays and all("create_graph" in e["cause"] for e in replays), minpy_jit.events()


def test_higher_order_gradient_of_non_differentiable_backward_raises_like_eager():
    """Footgun: in MXNet 1.9.1 many backward ops have no gradient themselves (`x * 2`'s backward).
    Behaviour: under jit() the same MXNetError as eager is raised, naming the operator."""
    def fn(x):
        x.attach_grad()
        with autograd.record():
            y = nd.sin(x) * 2
            (gx,) = autograd.grad([y], [x], head_grads=[nd.ones_like(x)], create_graph=True, retain_graph=True)
            z = gx.sum()
        z.backward()
        return x.grad

    x = arr(rand(5, seed=7))
    with pytest.raises(MXNetError) as eager_err:
        run_eager(fn, x)
    with pytest.raises(MXNetError) as jit_err:
        with minpy_jit.jit():
            fn(x.copy())
    assert "_backward_mul_scalar" in str(eager_err.value) and "_backward_mul_scalar" in str(jit_err.value)


# ------------------------------------------------------------------ random numbers

def _draws(x):
    mx.random.seed(42)
    a = nd.random.uniform(shape=x.shape) + x
    b = nd.random.normal(shape=x.shape)
    mx.random.seed(42)  # same seed again: `c` repeats `a`'s draws
    c = nd.random.uniform(shape=x.shape)
    return a, b, c


def test_random_seed_inside_block():
    """Footgun: mx.random.seed() inside the block, between recorded random ops -- if the ops ran
    after the seed call, or out of order, the draws would differ. Behaviour: the seed call flushes
    (cause 'random seed'), draws before and after it match eager's exactly."""
    x = arr(rand(3, 3, seed=8))

    def fn(x):
        r0 = nd.random.uniform(shape=(3, 3))
        a, b, c = _draws(x)
        r1 = nd.random.uniform(shape=(3, 3))
        return r0, a, b, c, r1

    eager = run_eager(fn, x, seed=7)
    mx.random.seed(7)
    with minpy_jit.jit():
        got = fn(x)
    assert_same(eager, got)
    assert minpy_jit.stats()["flushes"].get("random seed", 0) == 2


def test_random_seed_outside_block_and_cached_graph_redraws():
    """Footgun: a cached graph containing random ops is replayed on every iteration -- it must draw
    new numbers each time (not replay baked-in values) and consume the generator exactly like eager.
    Behaviour: with mx.random.seed() before the loop, every iteration's draws equal eager's."""
    def step():
        return nd.random.normal(shape=(2, 5)) * 2 + nd.random.randint(0, 9, shape=(2, 5)).astype("float32")

    mx.random.seed(3)
    eager = [step() for _ in range(4)]
    nd.waitall()
    mx.random.seed(3)
    got = []
    for _ in range(4):
        with minpy_jit.jit():
            got.append(step())
    assert_same(eager, got)
    assert minpy_jit.stats()["cache_hits"] >= 3
    assert not np.array_equal(got[0].asnumpy(), got[1].asnumpy())


# ------------------------------------------------------------------ views and in-place writes

def test_inplace_writes_through_views_replay_eagerly():
    """Footgun: `x[1:3] += 1`, or `v = x.reshape(...)` then `x += v` / `v += 1`: a write through one
    array changes another that shares its memory, which a functional graph cannot express.
    Behaviour: the trace is replayed eagerly in program order (exact), with the reason in events(),
    and counted as an eager fallback in stats()['fallbacks'] like every other."""
    def fn(x):
        x[1:3] += 1
        v = x.reshape((-1,))
        x += v.reshape(x.shape)
        v += 3
        return x * 2, v

    x = arr(rand(4, 3, seed=9))
    minpy_jit.reset_stats()
    with minpy_jit.jit():
        got = fn(x.copy())
    assert_same(run_eager(fn, x), got)
    eager = [e for e in minpy_jit.events() if e["eager"]]
    assert eager, minpy_jit.events()
    inplace = [e for e in eager if "in-place write" in e["miss_reason"] and "view" in e["miss_reason"]]
    # The two flushes holding the writes through views say so. The last one (`x * 2`) has no such
    # write: it compiles, or, when the eager writes before it are still running in MXNet's
    # engine, runs op by op (an error of theirs must reach exactly what it reaches eagerly).
    assert [e["cause"] for e in inplace] == ["reshape view", "eager op _plus_scalar"], eager
    assert all(e in inplace or ("ran op by op" in e["miss_reason"] and "may have failed" in e["miss_reason"])
               for e in eager), eager
    s = minpy_jit.stats()
    assert s["eager_replays"] >= 1
    assert sum(s["fallbacks"].values()) >= len(eager), s["fallbacks"]
    assert any("memory shared with another array" in r for r in s["fallback_reasons"]), s["fallback_reasons"]


VIEWS = {
    "slice": lambda x: x[1:3],
    "reshape": lambda x: x.reshape((-1,)),
    "index": lambda x: x[2],
    "detach": lambda x: x.detach(),
    "as_np_ndarray": lambda x: x.as_np_ndarray(),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_view_made_before_the_block_sees_writes_inside(view):
    """Footgun: a view made before the block (sharing memory with x), then x written in place and
    the view read inside the block, and the view written and x read. Behaviour: the aliasing is
    detected; reads through either array see every write, as in eager."""
    make = VIEWS[view]

    def fn(x, v):
        x += 1
        r1 = v * 1
        nd.elemwise_mul(x, x, out=x)
        v += 2
        r2 = x * 1
        return r1, r2, v * 1

    x, xe = arr(rand(4, 3, seed=10)), arr(rand(4, 3, seed=10))
    v, ve = make(x), make(xe)
    with minpy_jit.jit():
        got = fn(x, v)
    eager = fn(xe, ve)
    assert_same(eager, got)
    assert_same(xe, x)


# ------------------------------------------------------------------ threads

def test_arrays_shared_between_threads():
    """Footgun: an array produced (still pending) in a jit() scope on thread A is handed to thread B,
    which feeds it to an eager op and to its own jit() scope, while A keeps recording and later
    writes the array in place. Behaviour: B's use flushes A's pending work first (cause 'eager op
    (from another thread)'); B sees the value from before A's later write; A's results are right."""
    x = arr(rand(5, 4, seed=11))
    handoff, used = queue.Queue(), queue.Queue()
    res = {}

    def producer():
        try:
            with minpy_jit.jit():
                y = nd.tanh(x * 3) + 1
                handoff.put(y)
                used.get(timeout=30)
                y += 10
                res["y2"] = y * 2
            res["y"] = y
        except BaseException:
            handoff.put(None)  # unblock the consumer; run_threads re-raises
            raise

    def consumer():
        try:
            y = handoff.get(timeout=30)
            res["eager"] = nd.relu(y - 1.5)
            with minpy_jit.jit():
                res["jit"] = nd.sigmoid(y) * 2
            res["eager_np"] = res["eager"].asnumpy()
        finally:
            used.put(1)

    run_threads(producer, consumer)
    ye = run_eager(lambda x: nd.tanh(x * 3) + 1, x)
    assert_same((nd.relu(ye - 1.5), (nd.relu(ye - 1.5)).asnumpy(), nd.sigmoid(ye) * 2),
                (res["eager"], res["eager_np"], res["jit"]))
    ye += 10
    assert_same((ye, ye * 2), (res["y"], res["y2"]))


# ------------------------------------------------------------------ hybridized blocks

def test_hybridized_block_inside_jit():
    """Footgun: a hybridized Gluon block is already a CachedOp; inside jit() its inputs may still be
    pending. Behaviour: calling it flushes (cause 'hybridized block') and it runs as its own CachedOp
    -- its layers never appear in minpy_jit's graphs -- with eager-equal results; repeats hit."""
    mx.random.seed(12)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, activation="relu", in_units=5), gluon.nn.Dense(2, in_units=4))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = arr(rand(3, 5, seed=13))
    net(x).wait_to_read()

    def fn(x):
        h = x * 2 - 0.5
        return net(h) + 1, h

    expected = run_eager(fn, x)
    for _ in range(2):
        minpy_jit.reset_stats()
        with minpy_jit.jit():
            got = fn(x)
        assert_same(expected, got)
        st = minpy_jit.stats()
        assert st["flushes"].get("hybridized block") == 1, st["flushes"]
    assert st["cache_misses"] == 0, st
    assert not any("FullyConnected" in g["ir"] for g in minpy_jit.graphs())


# ------------------------------------------------------------------ errors while the graph runs

def test_op_failing_at_execution_time_fails_as_it_does_eagerly():
    """Footgun: `potrf` of a matrix that is not positive definite passes shape inference and fails
    only when it runs -- under jit() that is after the block, where a compiled graph would hand the
    error to every result it computes. Behaviour (README, "Errors"): a block holding an op that can
    fail runs op by op, so exactly the arrays computed from the failed op raise, at the first read
    of any of them, once; `a` (independent of it) reads (A + 1) * 3 as it does eagerly; jit() keeps
    working afterwards."""
    M = np.array([[1.0, 2.0], [2.0, 1.0]], dtype=np.float32)
    a, m = arr(M), arr(M)
    with minpy_jit.jit():
        a += 1
        chol = nd.linalg.potrf(m)
        a *= 3
    np.testing.assert_array_equal(a.asnumpy(), (M + 1) * 3)
    with pytest.raises(MXNetError) as ei:
        chol.asnumpy()
    assert "potrf" in str(ei.value), str(ei.value)
    assert chol.shape == M.shape
    with minpy_jit.jit():
        a += 1
        b = a * 3
    assert_same(run_eager(lambda a: (a + 1, (a + 1) * 3), arr((M + 1) * 3)), (a, b))


# ------------------------------------------------------------------ printing

def test_printing_an_array_inside_the_block(mxnet_kernels):
    """Footgun: print(y) inside the block shows a value that has not been computed yet. Behaviour:
    printing flushes (cause asnumpy) and prints exactly what eager prints; the block goes on."""
    def fn(x):
        out = []
        for i in range(3):
            y = nd.tanh(x) * (i + 1)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                print(y)
                print(y.sum())
            out.append((buf.getvalue(), y + 1))
        return out

    x = arr(rand(2, 3, seed=14))
    with minpy_jit.jit():
        got = fn(x)
    assert_same(run_eager(fn, x), got)
    assert minpy_jit.stats()["flushes"].get("asnumpy", 0) >= 3


# ------------------------------------------------------------------ creating arrays from numpy

def test_nd_array_from_numpy_inside_block_copies_at_the_call():
    """Footgun: `nd.array(np_buffer)` inside the block, then the numpy buffer is changed before the
    block ends -- if the copy were deferred, the later contents would leak in. Behaviour: the copy
    happens at the call (a 'write from numpy' flush if ops are pending)."""
    def fn(x, buf):
        y = x * 2
        c = nd.array(buf)
        buf[:] = 100
        return y + c, c

    x = arr(rand(3, 3, seed=15))
    buf_e, buf_j = rand(3, 3, seed=16), rand(3, 3, seed=16)
    eager = run_eager(fn, x, buf_e)
    with minpy_jit.jit():
        got = fn(x.copy(), buf_j)
    assert_same(eager, got)


# ------------------------------------------------------------------ float16 scalars

def test_float16_changing_scalar_recompiles_then_site_goes_eager(capsys):
    """Footgun (documented limit): float16 forms of lifted scalars stay attributes, so `x16 * s` with
    a new s every iteration compiles a new graph each time. Behaviour: correct values every iteration;
    past recompile_limit the site warns once and runs eagerly, still correct."""
    x = arr(rand(3, 4, seed=17).astype(np.float16))
    limit = minpy_jit.config()["recompile_limit"]
    site = "%s:%d" % (THIS, here() + 3)
    for i in range(limit + 4):
        s = 0.5 + i * 0.25
        with minpy_jit.jit():
            y = x * s + 1
        assert_same(run_eager(lambda x: x * s + 1, x), y)
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "WARNING" in ln]
    assert len(warnings) == 1 and site in warnings[0], warnings
    assert minpy_jit.stats()["sites"][site]["eager"] is True
