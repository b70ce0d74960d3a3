"""Recorded graphs whose backward MXNet's autograd runs later (through the static CachedOp the
graph ran as) give eager's gradients, for ops whose backward MXNet's static CachedOp mishandles."""
import pytest
from mxnet import autograd, gluon, nd

import mxnet as mx
from conftest import assert_same, rand, run_both


@pytest.mark.parametrize("req", ["write", "add"])
@pytest.mark.parametrize("cut", ["wait_to_read", "hybridized block"])
def test_elemwise_add_of_a_recorded_result_then_backward(req, cut):
    """Fuzz seed 424555. elemwise_add reading a result with recorded history, run as its own
    graph (the result is held, and a read or a hybridized block ends the segment), then
    backward(): MXNet's static CachedOp backward raised inside MXNet (storage type inference,
    'storage_type_num_unknown_nodes'), where eager code works."""
    def prog(x, w):
        x.attach_grad(grad_req=req)
        mx.random.seed(3)
        conv = gluon.nn.Conv2D(3, kernel_size=1, in_channels=2)
        conv.initialize(mx.init.Uniform(0.5))
        conv.hybridize()
        seen = []
        for _ in range(2):
            with autograd.record():
                h = nd.relu(x)
                y = nd.elemwise_add(h, x)
                if cut == "wait_to_read":
                    y.wait_to_read()
                    z = y * w
                else:
                    z = conv(y)
                loss = (z * z).mean()
            loss.backward()
            seen += [x.grad.copy(), loss]
        return seen
    r = run_both(prog, nd.array(rand(1, 2, 3, 3, seed=1)), nd.array(rand(1, 2, 3, 3, seed=2)))
    assert_same(*r)
    assert r.stats["executions"] > 0  # compiled graphs ran, not only eager fallbacks



@pytest.mark.parametrize("req", ["write", "add"])
@pytest.mark.parametrize("cut", ["wait_to_read", "hybridized block"])
@pytest.mark.parametrize("ste", ["round_ste", "sign_ste"])
def test_straight_through_estimator_of_a_recorded_result_then_backward(ste, req, cut):
    """round_ste/sign_ste (their gradient passes straight through) reading a result with
    recorded history, their output the graph's, then backward(): MXNet's static CachedOp
    backward raised inside MXNet ('storage_type_num_unknown_nodes'), as for elemwise_add above;
    a HybridBlock hybridized with static_alloc=True around round_ste(h) fails alike without jit()."""
    op = getattr(nd.contrib, ste)

    def prog(x, w):
        x.attach_grad(grad_req=req)
        mx.random.seed(3)
        conv = gluon.nn.Conv2D(3, kernel_size=1, in_channels=2)
        conv.initialize(mx.init.Uniform(0.5))
        conv.hybridize()
        seen = []
        for _ in range(2):
            with autograd.record():
                h = nd.relu(x)
                y = op(h)
                if cut == "wait_to_read":
                    y.wait_to_read()
                    z = y * w
                else:
                    z = conv(y)
                loss = (z * z).mean()
            loss.backward()
            seen += [x.grad.copy(), y, loss]
        return seen
    r = run_both(prog, nd.array(rand(1, 2, 3, 3, seed=1)), nd.array(rand(1, 2, 3, 3, seed=2)))
    assert_same(*r)
    assert r.stats["executions"] > 0
