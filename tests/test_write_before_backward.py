"""A write into an array a recorded op read, between the forward and a backward that MXNet's
autograd runs later (the forward was flushed first).

A recorded graph flushed before its backward is known now runs with each op its own autograd
node (flush.cc, parts_recorded_per_op: a zero-gradient op recorded later must make MXNet skip
them as eagerly), unfused: MXNet's kernels then read what eager's read by construction. The
checks below were written for the fused form (one CachedOp node), which still runs where the
backward is known at the flush (test_fused_grad.py); they now hold for the per-op form.

Eager MXNet performs such a write under autograd.record() and then raises (for a plain array it
just writes), and its backward reads, per op, what that op's gradient reads as it is then: the
input array (the written data) or the op's own saved result. A fused unit's backward reads the
same (cpp/src/fuse.cc, saved_for_backward): graph inputs from their arrays, every member result a
derivative reads from an extra output the forward saved, never a recomputation from inputs that
may have been written since. Each case is a reduced fuzz reproducer
(tests/stress/repros/history_seed*.py); each failed before.
"""
import contextlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, nd
from mxnet.base import MXNetError

import minpy_jit
from conftest import Both, arr, copy_args, stats_delta
from test_fused_grad import bits_equal  # float32 bit for bit, NaN equal to NaN

F32 = np.float32


def all_bits_equal(res):
    for got, want in zip(res.jitted, res.eager):
        bits_equal(got.asnumpy(), want.asnumpy())


def data(seed, shape=(5, 4)):
    return arr(np.random.RandomState(seed).uniform(-2, 2, shape).astype(F32))


def refused_write(fn):
    """A write MXNet performs under record() and then refuses (raises)."""
    try:
        fn()
    except MXNetError:
        pass


@pytest.fixture(autouse=True)
def fresh_cache():
    minpy_jit.clear_cache()
    yield


def run_both(fn, *args):
    """fn(J, *args) eagerly (J a no-op context), then with J = minpy_jit.jit, each on fresh
    copies of args. Each test opens its own `with J():` site, so no scalar another test used
    at the same site is lifted into a graph input here."""
    eager = fn(contextlib.nullcontext, *copy_args(args))
    mx.nd.waitall()
    before = minpy_jit.stats()
    jitted = fn(minpy_jit.jit, *copy_args(args))
    mx.nd.waitall()
    res = Both((eager, jitted))
    res.stats = stats_delta(before, minpy_jit.stats())
    return res


def test_result_with_history_read_by_a_fused_derivative_then_written():
    """Seeds 562348, 651763: abs(h) in a fused unit reads h, a result of an earlier flush; h is
    then written. Eager's abs backward reads the written h (a sign flips); the unit read h
    through a forward-time _copy."""
    def fn(J, x):
        with J():
            x.attach_grad()
            with autograd.record():
                h = nd.tanh(x)
                h.wait_to_read()
                y = nd.softsign(nd.tanh(nd.relu(nd.abs(h) - 1e-3) * -1.5)) + 7.5
                y.wait_to_read()
                refused_write(lambda: h.__isub__(x))
            y.backward()
            return y, h, x.grad

    res = run_both(fn, data(562348))
    all_bits_equal(res)
    assert res.stats["per_op_autograd"] >= 1


@pytest.mark.parametrize("req", ["write", "add"])
def test_written_variable_read_by_recomputed_values(req):
    """Seed 321949: tanh(x * x) read by later ops of the unit, x then written in place. Eager's
    kernels read their own saved results; the unit recomputed them from the new x."""
    def fn(J, x, w, c):
        with J():
            x.attach_grad(grad_req=req)
            with autograd.record():
                y = nd.square(nd.clip(nd.tanh(x * x), -3.0, 3.0) - 2.0) * 0.5
                z = nd.dot(x, w)  # a second reader of x: the unit reads x itself, no _copy
                y.wait_to_read()
                refused_write(lambda: x.__iadd__(c))
            y.backward()
            return y, z, x.grad

    res = run_both(fn, data(321949, (4, 5)), data(1, (5, 3)), data(3, (4, 5)))
    all_bits_equal(res)


def test_relu_derivative_reads_its_written_result():
    """Seed 629158: relu's gradient is relu_grad of its *output* (ElemwiseGradUseOut, and
    Activation's relu alike); the result was written (`a14 += a15`) before the backward."""
    def fn(J, x, b):
        with J():
            x.attach_grad()
            with autograd.record():
                y = nd.relu(nd.sigmoid(nd.tanh(nd.abs(x * 2.0))) - 0.7)
                a = nd.Activation(x * 3.0, act_type="relu")
                y.wait_to_read()
                refused_write(lambda: y.__iadd__(b))
                refused_write(lambda: a.__isub__(b))
            autograd.backward([y, a])
            return y, a, x.grad

    res = run_both(fn, data(629158), data(2))
    all_bits_equal(res)
    # The read kept the trace open (flush.cc); the refused write into its result then ran it op
    # by op, each op recorded by MXNet as eagerly, before the write.
    assert res.stats["per_op_autograd"] + res.stats["eager_replays"] >= 1


def test_added_gradient_variable_read_by_a_derivative_stays_mxnets():
    """A grad_req='add' variable whose value a derivative reads: our kernel cannot add into its
    gradient, and the _copy that adds would hand the backward a forward-time copy. That unit
    stays MXNet's ops; two backward passes add up as eagerly."""
    def fn(J, x):
        with J():
            x.attach_grad(grad_req="add")
            with autograd.record():
                y = nd.abs(x) * 2.0 + 1.0
                y.wait_to_read()
                refused_write(lambda: x.__imul__(-1.0))
            y.backward(retain_graph=True)
            y.backward()
            return y, x.grad

    res = run_both(fn, data(5))
    all_bits_equal(res)


@pytest.mark.parametrize("keep", [True, False])
def test_common_path_read_before_backward_is_exact(keep):
    """loss = f(x); loss.asscalar(); loss.backward(): the read runs a copy of the forward without
    autograd and keeps the trace open, so the backward runs in our graph (keep); with
    config(reads_keep_recorded=False) it flushes the forward before its backward is known, so it
    runs with each op its own autograd node. Gradients equal eager's bit for bit either way."""
    def fn(J, x, t):
        with J():
            x.attach_grad()
            with autograd.record():
                d = nd.relu(x * 1.5 + 0.5) - t
                loss = (d * d).sum()
            loss.asscalar()
            loss.backward()
            return loss, x.grad

    minpy_jit.config(reads_keep_recorded=keep)
    try:
        res = run_both(fn, data(7, (64, 32)), data(8, (64, 32)))
    finally:
        minpy_jit.config(reads_keep_recorded=True)
    all_bits_equal(res)
    if keep:
        assert res.stats["reads_kept_open"] == 1 and res.stats["backward_in_graph"] == 1
        assert res.stats["per_op_autograd"] == 0
    else:
        assert res.stats["per_op_autograd"] >= 1


def test_graph_input_read_by_a_derivative_is_read_when_the_backward_runs():
    """x * w fused with more: the product's derivative reads w, a plain array written after
    the forward (outside record(): MXNet just writes). Eager's backward reads the new w."""
    def fn(J, x, w):
        with J():
            x.attach_grad()
            with autograd.record():
                y = nd.tanh(x * w) * 0.5
            y.wait_to_read()
            w[:] = 3.0
            y.backward()
            return y, x.grad

    res = run_both(fn, data(11), data(12))
    all_bits_equal(res)
    assert res.stats["per_op_autograd"] >= 1


@pytest.mark.parametrize("reqs", [("write", "add"), ("add", "write")])
def test_grad_req_of_an_input_is_part_of_the_compiled_choice(reqs):
    """The same code at the same site, first on a variable with one grad_req, then on one with
    the other: whether a fused unit's gradient reaches the input through _copy (which adds), and
    whether a clip of it stays MXNet's op, is chosen per grad_req (it is in the trace key), so
    the second graph is not the first one reused. Two backward passes each, from 0.5."""
    def fn(J, x, w, req):
        for v in (x, w):
            v.attach_grad(grad_req=req)
            v.grad[:] = 0.5
        for _ in range(2):
            with J():
                with autograd.record():
                    y = nd.tanh(x * 2.0) * 3.0  # x's only reader: a fused unit
                    z = nd.clip(w, -1.0, 1.0) * 2.0 + 1.0  # w's only reader: a clip
                y.wait_to_read()
                autograd.backward([y, z])
        return x.grad, w.grad

    for req in reqs:
        res = run_both(fn, data(13), data(14), req)
        all_bits_equal(res)
