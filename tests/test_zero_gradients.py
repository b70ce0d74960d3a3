"""A zero gradient (a comparison's, floor's: MXNet's zero node) makes eager's gradient pass skip
the ops behind it, so their backward never runs, and 0 * inf there is never NaN. Under jit() a
part of a recorded segment runs as one CachedOp, whose backward hands real zero-filled arrays
on and runs with them: such parts now run op by op (fuzz seeds 414917, 212037)."""
import pytest
from mxnet import autograd, nd

import mxnet as mx
from conftest import assert_same, rand, run_both


def _fallbacks(stats):
    return sum(n for why, n in stats["fallback_reasons"].items() if "zero gradient" in why)


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
    assert_same(*r, rtol=0)
    assert _fallbacks(r.stats) > 0  # counted


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
    assert_same(*r, rtol=0)
    assert _fallbacks(r.stats) > 0


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
    assert_same(*r, rtol=0)


def test_stop_gradient_inside_one_graph_stays_compiled():
    """A BlockGrad inside one part: nnvm's own pass skips what is behind it in the graph, as
    eager's does, so the part stays one compiled graph (no op-by-op run, no fallback)."""
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
    assert_same(*r, rtol=0)
    assert _fallbacks(r.stats) == 0 and r.stats["executions"] > 0


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
    assert_same(*r, rtol=0)
    assert _fallbacks(r.stats) > 0  # counted
