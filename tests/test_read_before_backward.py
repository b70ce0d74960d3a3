"""A read of a recorded forward before its backward() (`print(loss.asscalar()); loss.backward()`)
runs a copy of the pending trace without autograd and keeps the trace open (flush.cc,
read_keeps_recorded_trace): the backward then sees the whole forward, fused, in our graph, instead
of ops MXNet recorded one by one. Every case against eager MXNet, bit for bit."""
import numpy as np
import pytest
from mxnet import autograd, nd

import minpy_jit
from conftest import assert_same, rand, run_both


def chain(x):
    for _ in range(3):
        x = nd.tanh(x * 0.9 + 0.1) * nd.sigmoid(x)
    return x


@pytest.mark.parametrize("how", ["asnumpy", "wait_to_read", "waitall", "asscalar"])
def test_read_then_backward_runs_the_whole_step_fused(how):
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = chain(x)
            s = y.sum()
        first = {"asnumpy": lambda: s.asnumpy(), "wait_to_read": s.wait_to_read, "waitall": nd.waitall,
                 "asscalar": s.asscalar}[how]()
        s.backward()
        return [x.grad, y, s]
    r = run_both(prog, nd.array(rand(7, 9, seed=1) * 3))
    assert_same(*r)
    st = r.stats
    assert st["reads_kept_open"] == 1
    assert st["per_op_autograd"] == 0 and st["backward_by_mxnet"] == 0 and st["backward_in_graph"] == 1


def test_two_reads_with_nothing_between_run_once():
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = chain(x)
        a = y.asnumpy().copy()
        b = y.sum().asnumpy()  # a new op: recorded into the open trace, then read
        y.backward()
        return [x.grad, y, nd.array(a), nd.array(b)]
    r = run_both(prog, nd.array(rand(5, 4, seed=2)))
    assert_same(*r)


def test_a_second_read_rereads_nothing():
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = chain(x)
        a = y.asnumpy().copy()
        y.wait_to_read()
        b = y.asnumpy().copy()
        y.backward()
        return [x.grad, nd.array(a), nd.array(b)]
    r = run_both(prog, nd.array(rand(6, 4, seed=3)))  # a shape no other test reads twice
    assert_same(*r)
    assert r.stats["reads_kept_open"] == 1
    assert r.stats["flushes"].get("wait_to_read", 0) == 0


def test_random_draw_is_not_read_twice():
    """A trace with a draw would draw again: it flushes, as before (each op its own autograd node)."""
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = nd.tanh(x) * nd.random.uniform_like(x)
        y.asnumpy()
        y.backward()
        return [x.grad, y]
    r = run_both(prog, nd.array(rand(6, seed=4)), seed=11)
    assert_same(*r)
    assert r.stats["reads_kept_open"] == 0


def test_read_without_backward_is_kept_once_per_trace():
    """Read, then the scope ends with no backward: the forward ran twice; the same trace read
    again flushes at the read."""
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = chain(x)
        return [y, nd.array(y.asnumpy())]
    x = nd.array(rand(3, 3, seed=5))
    first = run_both(prog, x)
    assert_same(*first)
    again = run_both(prog, x)
    assert_same(*again)
    assert again.stats["reads_kept_open"] == 0


def test_read_then_backward_of_an_add_variable():
    """grad_req='add': backward() is MXNet's, with its heads known: the kept trace runs under
    autograd then, as one graph whose backward reaches every op."""
    def prog(x):
        x.attach_grad(grad_req="add")
        with autograd.record():
            s = chain(x).sum()
        s.asscalar()
        s.backward()
        with autograd.record():
            s = (chain(x) * 2).sum()
        s.asscalar()
        s.backward()
        return [x.grad, s]
    r = run_both(prog, nd.array(rand(4, 6, seed=6)))
    assert_same(*r)


@pytest.mark.parametrize("head", ["greater", "argmax", "floor"])
def test_zero_gradient_head_after_the_read(head):
    """The zero-gradient head comes after the read: recorded into the kept trace, the backward
    sees it, as test_zero_gradients's early-flush cases."""
    heads = {"greater": lambda y: y > 0, "argmax": lambda y: nd.argmax(y, axis=0), "floor": nd.floor}
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = nd.sqrt(x) * -2
            y.asnumpy()
            z = heads[head](y)
        z.backward()
        return [x.grad, y, z]
    r = run_both(prog, nd.array([1.0, -2.0, 0.0, 3.0]))
    assert_same(*r)


def test_training_loop_reading_the_loss_before_backward():
    """50 steps of a small MLP in the NDArray form, the loss read before backward(): weights and
    losses equal eager's bit for bit."""
    rs = np.random.RandomState(7)
    init = [rs.uniform(-0.3, 0.3, s).astype(np.float32) for s in ((16, 12), (16,), (4, 16), (4,))]
    data = nd.array(rs.uniform(-1, 1, (8, 12)).astype(np.float32))
    label = nd.array(rs.randint(0, 4, (8,)).astype(np.float32))

    def train(scope):
        ws = [nd.array(a) for a in init]
        for w in ws:
            w.attach_grad()
        losses = []
        for _ in range(50):
            with scope():
                with autograd.record():
                    h = nd.relu(nd.FullyConnected(data, ws[0], ws[1], num_hidden=16))
                    out = nd.FullyConnected(h, ws[2], ws[3], num_hidden=4)
                    loss = nd.mean(-nd.pick(nd.log_softmax(out), label))
                losses.append(loss.asscalar())
                loss.backward()
                for w in ws:
                    nd.sgd_update(w, w.grad, lr=0.1, out=w)
        return [w.asnumpy() for w in ws], np.array(losses, dtype=np.float32)

    import contextlib
    ew, el = train(contextlib.nullcontext)
    before = minpy_jit.stats()["reads_kept_open"]
    jw, jl = train(minpy_jit.jit)
    assert minpy_jit.stats()["reads_kept_open"] - before == 50
    assert np.array_equal(el, jl)
    for a, b in zip(ew, jw):
        assert np.array_equal(a, b)


def test_backward_in_graph_fuses_a_unit_reading_a_variable_twice():
    """x read by two ops of a unit (sigmoid(x) * x): two gradient contributions, summed alike in
    either order; backward()'s node reading x is no third one (fuse.cc)."""
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = nd.relu(x * 0.5 + 0.25) * x
        y.backward()
        return [x.grad, y]
    r = run_both(prog, nd.array(rand(9, 5, seed=8) * 2))
    assert_same(*r)
    assert r.stats["backward_in_graph"] == 1 and r.stats["fused_kernels"] >= 1
