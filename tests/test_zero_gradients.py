"""A zero gradient (a comparison's, floor's: MXNet's zero node) makes eager's gradient pass skip
the ops behind it, so their backward never runs, and 0 * inf there is never NaN. Under jit() a
part of a recorded segment run as one static CachedOp is one autograd node, whose backward hands
real zero-filled arrays on and runs with them: such parts run as a graph whose ops MXNet records
one by one (stats()['per_op_autograd']; fuzz seeds 414917, 212037), as does every part whose
history outlives its flush (1415001, 1439174, 1482938: the zero-gradient op comes later)."""
import contextlib

import numpy as np
import pytest
from mxnet import autograd, nd

import minpy_jit
import mxnet as mx
from conftest import assert_same, rand, run_both


def _fallbacks(stats):
    return sum(n for why, n in stats["fallback_reasons"].items() if "zero gradient" in why)


def _per_op(stats):
    """Ran as a graph whose ops MXNet recorded one by one, not eagerly."""
    return stats["per_op_autograd"] > 0 and _fallbacks(stats) == 0


@pytest.mark.parametrize("retain", [True, False])
def test_power_behind_a_comparison(retain):
    """Fuzz seed 414917: relu(x) held, pow(b, relu(x)) held (b < 0: its gradient is NaN), then
    `== 3.0`, backward from the comparison: eager's gradients are 0, a CachedOp part's NaN."""
    def prog(x, b):
        x.attach_grad(grad_req="add")
        b.attach_grad()
        with autograd.record():
            h = nd.relu(x)
            p = nd.broadcast_power(b, h)
            c = p == 3.0
        c.backward(retain_graph=retain)
        return [x.grad, b.grad, h, p, c]
    x = nd.array(rand(1, 4, 1, 1, seed=1) * 2)
    b = nd.array([[[[-1.3]]]])
    r = run_both(prog, x, b)
    assert_same(*r)
    assert _per_op(r.stats)


def test_chain_behind_floor_in_predict_mode():
    """Fuzz seed 212037: relu, max, hypot (0/0 in its backward at 0), floor, each held, under
    record(train_mode=False), backward(retain_graph=True) from floor's result."""
    def prog(x):
        x.attach_grad(grad_req="add")
        with autograd.record(train_mode=False):
            a = nd.relu(x)
            m = nd.max(a, axis=0)
            h = nd.broadcast_hypot(m, m)
            f = nd.floor(h)
        f.backward(retain_graph=True)
        return [x.grad, a, m, h, f]
    r = run_both(prog, nd.array([-0.5, -1.5]))
    assert_same(*r)
    assert _per_op(r.stats)


def test_sqrt_behind_a_comparison_then_a_real_loss():
    """A held sqrt(x) (x = 0: infinite gradient) read by a comparison whose result is the head,
    and the same x through a real loss in a second backward: both as eager's."""
    def prog(x):
        x.attach_grad()
        with autograd.record():
            s = nd.sqrt(x)
            c = s > 0.5
        c.backward()
        g1 = x.grad.copy()
        with autograd.record():
            loss = (nd.sqrt(x + 1) * 2).sum()
        loss.backward()
        return [g1, x.grad, s, c]
    r = run_both(prog, nd.array([0.0, 0.25, 1.0]))
    assert_same(*r)


def test_stop_gradient_inside_one_graph_stays_compiled():
    """A BlockGrad inside one part: nnvm's own pass skips what is behind it in the graph, as
    eager's does, so the part stays one static graph (no op-by-op run, no fallback)."""
    def prog(x, w, v):
        w.attach_grad()
        v.attach_grad()
        for _ in range(2):
            with autograd.record():
                target = nd.BlockGrad(nd.dot(x, v))
                loss = ((nd.dot(x, w) - target) ** 2).sum()
            loss.backward()
        return [w.grad, v.grad, loss]
    r = run_both(prog, nd.array(rand(4, 3, seed=1)), nd.array(rand(3, 2, seed=2)), nd.array(rand(3, 2, seed=3)))
    assert_same(*r)
    assert _fallbacks(r.stats) == 0 and r.stats["executions"] > 0 and r.stats["per_op_autograd"] == 0


@pytest.mark.parametrize("like", ["uniform_like", "normal_like"])
def test_random_like_of_an_op_without_gradient(like):
    """History seed 518277: exp, shuffle, uniform_like, backward(retain_graph=True) from the draw.
    A `*_like` draw gives its input MXNet's zero node, so eager's pass never reaches shuffle (which
    has no gradient); jit() ran shuffle eagerly and the draw as a part whose backward handed shuffle
    a zero array: 'Operator _shuffle is non-differentiable' under jit() only."""
    def prog(x):
        x.attach_grad()
        events = []
        with autograd.record():
            e = nd.exp(x)
            s = nd.random.shuffle(e)
            d = getattr(nd.random, like)(s)
        try:
            d.backward(retain_graph=True)
            events.append("ok")
        except mx.base.MXNetError:
            events.append("MXNetError")
        return events, x.grad, e
    r = run_both(prog, nd.array(rand(3, seed=2)), seed=5)
    assert r.eager[0] == ["ok"]
    assert_same(*r)
    assert _per_op(r.stats)


# ------------------------------------------------------------------ a zero gradient recorded after a flush
# A recorded segment flushed before its backward is known (a read, waitall, an op outside the
# gradient graph) runs as a graph whose ops MXNet records one by one, as eagerly: a zero-gradient
# op recorded later then makes MXNet's pass skip them as eager's does (fuzz seeds 1415001,
# 1439174, 1482938). Each case also fails with the earlier ops as one static CachedOp node.

def _early_flush(how, x):
    if how == "asnumpy":
        x.asnumpy()
    elif how == "waitall":
        nd.waitall()
    elif how == "flush":
        minpy_jit.flush()
    elif how == "update":  # an op reading no array of the graph: recorded outside it, a flush
        w, g = nd.ones((2,)), nd.ones((2,))
        nd.sgd_update(w, g, lr=0.1, out=w)


ZERO_HEADS = {
    "greater": lambda y: y > 0,
    "floor": nd.floor,
    "argmax": lambda y: nd.argmax(y, axis=0),
    "BlockGrad": nd.BlockGrad,
    "uniform_like": lambda y: nd.random.uniform_like(y),
    "equal": lambda y: nd.broadcast_equal(y, y * 0.5),
}


@pytest.mark.parametrize("how", ["asnumpy", "waitall", "flush", "update"])
@pytest.mark.parametrize("head", sorted(ZERO_HEADS))
def test_zero_gradient_recorded_after_a_flush(how, head):
    """sqrt(x) * -2 (x = 0: an infinite derivative, x < 0: NaN) flushed, then a zero-gradient head:
    eager's pass skips sqrt and the product, x.grad is 0 ('write'); a static CachedOp's backward
    gave NaN and -0."""
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = nd.sqrt(x) * -2
            _early_flush(how, y)
            z = ZERO_HEADS[head](y)
        z.backward()
        return [x.grad, y, z]
    r = run_both(prog, nd.array([1.0, -2.0, 0.0, 3.0]), seed=3)
    assert_same(*r)


@pytest.mark.parametrize("req", ["write", "add"])
def test_gemm2_behind_a_draw_after_an_update_under_record(req):
    """Fuzz seed 1415001 (repro_hand_1415001.py): gemm2 of a variable, tanh, an sgd_update under
    record() (outside the gradient graph: a flush), then uniform_like, backward from the draw.
    Eager skips gemm2's backward, whose kernel into a grad_req='add' gradient reads uninitialised
    memory; jit() ran it (garbage in a14.grad where eager keeps its zeros)."""
    def prog(a12, a14, a9, a18):
        a14.attach_grad(grad_req=req)
        with autograd.record():
            t = nd.tanh(a14)
            g = nd.linalg.gemm2(a14, a12, alpha=0.25)
            h = nd.tanh(g)
            nd.sgd_update(a9, a18, lr=2.7, wd=0.07, out=a9)
            d = nd.random.uniform_like(h, low=0, high=2.5)
            r = nd.relu(d * 1.0)
        d.backward()
        return [a14.grad, a9, t, h, r]
    a12 = nd.array(-np.eye(2) + 0.1 * rand(2, 2, seed=1))
    res = run_both(prog, a12, nd.array(rand(4, 2, seed=2) * 2), nd.array(rand(4, seed=3)), nd.array(rand(4, seed=4)),
                   seed=5)
    assert_same(*res)
    assert np.array_equal(res.jitted[0].asnumpy().view(np.int32), res.eager[0].asnumpy().view(np.int32))


def test_argmax_of_a_division_after_a_read():
    """Fuzz seed 1439174: a2 / relu(...) (a zero divisor: an infinite derivative) flushed by a read,
    argmax of the quotient, autograd.grad through it: eager 0, jit() NaN."""
    def prog(a2):
        a2.attach_grad()
        with autograd.record():
            a5 = nd.relu(nd.softsign(nd.negative((((a2 - 7.5) * -2.7) + a2) * a2) * 0.5) * 1e-3)
            a6 = a2 / a5
            a6.asnumpy()
            a7 = nd.argmax(a6, axis=1)
        g, = autograd.grad(a7, [a2])
        return [g, a6, a7]
    r = run_both(prog, nd.array(rand(1, 5, seed=4) * 2))
    assert_same(*r)


def test_equal_of_a_product_after_waitall_in_predict_mode():
    """Fuzz seed 1482938: prod(relu(x)), waitall, broadcast_equal with another variable's product,
    backward under record(train_mode=False): eager 0, jit() NaN."""
    def prog(a2, a9):
        a2.attach_grad()
        a9.attach_grad()
        with autograd.record(train_mode=False):
            a15 = nd.prod(nd.relu(a2))
            a16 = a9 * -0.75
            nd.waitall()
            a17 = nd.broadcast_equal(a15, a16)
        a17.backward()
        return [a2.grad, a9.grad, a15, a17]
    r = run_both(prog, nd.array(rand(4, 2, seed=5) * 2), nd.array(rand(1, seed=6) * 2))
    assert_same(*r)


def test_fused_chain_behind_a_comparison_with_backward_in_the_graph():
    """sqrt(x) * -2 (fusable) then `> 0` and backward() in one trace: the backward runs inside our
    graph, where a fused unit's gradient always runs (NaN where eager skips sqrt: 0)."""
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = nd.sqrt(x) * -2
            z = y > 0
        z.backward()
        return [x.grad, y, z]
    r = run_both(prog, nd.array([1.0, -2.0, 0.0, 3.0]))
    assert_same(*r)


def test_op_beside_the_loss_that_its_backward_does_not_reach():
    """y = x * 1 (not held), log(y) held beside the loss y * 2: eager's backward from the loss
    never visits log; one static graph of all four ops ran log's backward with a zero head
    gradient, 0 * (1 / 0) = NaN into x.grad where eager gives 2 (the README's former known limit)."""
    def parts(x):
        y = x * 1.0
        return nd.log(y), (y * 2.0).sum()

    def prog(x):
        x.attach_grad()
        with autograd.record():
            a, b = parts(x)
        b.backward()
        return [x.grad, a, b]
    r = run_both(prog, nd.array([0.0, 1.0, 2.0]))
    assert_same(*r)


def test_function_replayed_under_record_then_a_comparison():
    """@minpy_jit.function's replay launches its graph directly, a node of MXNet's autograd graph
    whose backward is not known then: sqrt(x) * -2, then `> 0` and backward(). The second and
    third calls replay; a static CachedOp node gave NaN and -0 in x.grad where eager gives 0."""
    def body(x):
        return nd.sqrt(x) * -2

    def prog(fn):
        x = nd.array([1.0, -2.0, 0.0, 3.0])
        grads = []
        for _ in range(3):
            x.attach_grad()
            with autograd.record():
                z = fn(x) > 0
            z.backward()
            grads.append(x.grad.asnumpy().copy())
        return grads

    before = minpy_jit.stats()["per_op_autograd"]
    for e, j in zip(prog(body), prog(minpy_jit.function(body))):
        assert np.array_equal(e.view(np.uint32), j.view(np.uint32)), (e, j)
    assert minpy_jit.stats()["per_op_autograd"] > before  # replayed, not run as Python


def test_autograd_grad_behind_a_comparison_beside_a_float64_update():
    """Fuzz seed 1654883: broadcast_power(x, x) of x < 0 (NaN, and NaN in its backward) compared
    with -0.75, a float64 nag_mom_update recorded beside it under record() (an op outside the
    gradient graph: the segment before it is flushed before its backward is known), then
    autograd.grad from the comparison. Eager's gradient is 0; jit() gave NaN while such a segment
    ran as one static CachedOp (before c74b5b2). Through autograd.grad here, as through backward()
    in test_zero_gradient_recorded_after_a_flush."""
    def prog(x, w, g, m):
        x.attach_grad()
        with autograd.record():
            s = nd.sigmoid(x)
            p = nd.broadcast_power(x, x)
            nd.nag_mom_update(w, g, m, lr=0.37, momentum=0.9, out=w)
            c = p == -0.75
        grads = autograd.grad(c, [x])
        return [grads[0], x.grad, s, p, c, w, m]
    rs = np.random.RandomState(1654883)
    f64 = [nd.array(rs.uniform(-2, 2, (2, 4, 4)), dtype="float64") for _ in range(2)]
    r = run_both(prog, nd.array([[-0.29761305, -0.7666539]]), f64[0], f64[1],
                 nd.array(rs.uniform(0, 0.5, (2, 4, 4)), dtype="float64"))
    assert_same(*r)
    assert not np.isnan(r[1][0].asnumpy()).any()
    assert _per_op(r.stats)


# ------------------------------------------------------------------ the sign of a zero gradient
#
# MXNet's aggregation of a value's gradients (AggregateGradient) drops zero nodes from the sum,
# keeping at least one: a variable read by x0 * x1 and by uniform_like gets the product's
# gradient alone, -0 where that is -0. A part run as one CachedOp hands such an input a
# zero-filled array instead, and the in-graph gradient pass's own aggregation summed the zero
# nodes: -0 + 0 is +0 (zero_grad_sweep.py: 15 of 4000 programs differed only there).

def _same_bits(eager, jitted):
    for k, (e, j) in enumerate(zip(eager, jitted)):
        e, j = e.asnumpy(), j.asnumpy()
        assert e.dtype == j.dtype and e.shape == j.shape, k
        bits = "u%d" % e.itemsize
        same = (e.view(bits) == j.view(bits)) | (np.isnan(e) & np.isnan(j))
        assert same.all(), "result %d: eager %s, jit() %s" % (k, e[~same], j[~same])


_SIGNED_ZEROS = dict(x0=[[-0.0, 2.5, -3.0, 0.0]], x1=[[-0.0, -0.0, 0.0, -1.0]], x2=[[1.0, -0.0, 0.5, 2.0]])


def _zero_beside_a_product(x0, x1, x2, how):
    with autograd.record():
        v0 = nd.broadcast_hypot(x2, x0)   # an op the heads do not reach
        v1 = x0 * x1
        z0 = nd.cast(nd.random.uniform_like(x0), "float32") + v1 * 0.25
        z1 = nd.floor(v1)
    if how == "backward":
        autograd.backward([z0, z1])
        return [x0.grad, x1.grad, x2.grad, v0, v1, z1]
    g = autograd.grad([z0, z1], [x0, x1])
    return list(g) + [v0, v1, z1]


def _argsort_beside_a_product(x0, x1, x2, how):
    with autograd.record():
        v = x0 * -1.5
        w = x0 * v
        z = nd.cast(nd.argsort(x0, axis=1), "float32") + w * 0.25
    if how == "backward":
        z.backward()
        return [x0.grad, v, w, z]
    return [autograd.grad(z, [x0])[0], v, w, z]


@pytest.mark.parametrize("req", ["write", "add"])
@pytest.mark.parametrize("how", ["backward", "grad"])
@pytest.mark.parametrize("program", [_zero_beside_a_product, _argsort_beside_a_product])
def test_a_zero_gradient_beside_a_real_one_keeps_eager_sign_of_zero(program, how, req):
    outs = []
    for use_jit in (False, True):
        xs = [nd.array(_SIGNED_ZEROS[k]) for k in ("x0", "x1", "x2")]
        for x in xs:
            x.attach_grad(grad_req=req)
        mx.random.seed(3)
        for _ in range(2):  # the second time, backward() runs in the graph where it can
            with (minpy_jit.jit() if use_jit else contextlib.nullcontext()):
                got = program(*xs, how)
            outs.append([a.copy() for a in got])
    _same_bits(outs[0], outs[2])
    _same_bits(outs[1], outs[3])


@pytest.mark.parametrize("seed,kind", [(255, None), (552, None), (788, None), (1100, None), (1263, None),
                                       (1239, "grad"), (1263, "grad"), (2095, "grad")])
def test_zero_grad_sweep_programs_that_differed_in_the_sign_of_a_zero(seed, kind):
    """`zero_grad_sweep.py 1500 0` and `zero_grad_sweep.py 3000 0 grad`: these differed only in the
    sign of a zero gradient (parts run as one graph each, MXNet's backward summing their
    zero-filled arrays); compared bit for bit."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "stress"))
    import zero_grad_sweep
    eager = zero_grad_sweep.run(seed, False, kind)
    jitted = zero_grad_sweep.run(seed, True, kind)
    assert zero_grad_sweep.difference(eager, jitted, signed_zeros=True) is None, "\n".join(eager[2])


_SUMMED_ZEROS = {
    # q read twice by a comparison: two zero nodes for q (fuzz seed 11220377: -0 for +0)
    "comparison_of_a_value_with_itself": lambda x, y: (lambda q: nd.broadcast_greater(q, q))(x / y),
    # two rounding ops of one product, both zero nodes for it
    "floor_and_ceil_of_one_product": lambda x, y: (lambda q: nd.floor(q) + nd.ceil(q))(x * y),
}


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("program", sorted(_SUMMED_ZEROS))
def test_a_value_given_two_zero_gradients_skips_the_ops_before_it(program, fuse):
    """Eager's aggregation drops zero nodes from a sum, so a value read twice by ops with a zero
    gradient gets a zero node and the division before it is skipped (x.grad +0, where y = 0
    too). MXNet's gradient pass run inside our graph sums them and ran _backward_div: -0 and
    NaN. Such a backward is left to MXNet's autograd."""
    f = _SUMMED_ZEROS[program]

    def prog(x, y):
        x.attach_grad()
        y.attach_grad()
        with autograd.record():
            z = f(x, y)
        z.backward()
        return [x.grad, y.grad, z]
    previous = minpy_jit.config()["fuse"]
    minpy_jit.config(fuse=fuse)
    try:
        r = run_both(prog, nd.array([[1.5, -2.0, 0.0, 3.0]]), nd.array([[-3.0, 2.0, -1.0, 0.0]]))
    finally:
        minpy_jit.config(fuse=previous)
    assert_same(*r)
    assert r.stats["backward_in_graph"] == 0 and r.stats["backward_by_mxnet"] == 1, r.stats


def test_one_zero_gradient_keeps_the_backward_in_the_graph(mxnet_kernels):
    """One zero node per value: the pass in our graph skips as eager does, and runs there."""
    def prog(x, y):
        x.attach_grad()
        y.attach_grad()
        with autograd.record():
            z = nd.round(x / y)
        z.backward()
        return [x.grad, y.grad, z]
    r = run_both(prog, nd.array([[1.5, -2.0, 0.0, 3.0]]), nd.array([[-3.0, 2.0, -1.0, 0.0]]))
    assert_same(*r)
    assert r.stats["backward_in_graph"] == 1, r.stats
