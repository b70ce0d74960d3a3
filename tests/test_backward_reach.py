"""A backward runs the backward of exactly the recorded ops its heads depend on, as eager
MXNet's autograd does: no other op's backward (BatchNorm updates its running statistics there),
no gradient buffer of a variable the heads do not depend on (eager leaves it as it was).
Programs shrunk from fuzz seeds (tests/stress/repros/), each compared with eager MXNet.
"""
import mxnet as mx
from mxnet import autograd, gluon, nd

from conftest import assert_same, rand, run_both


def batchnorm(channels, data_shape):
    """A BatchNorm block, initialised and shaped eagerly (its running statistics start at 0, 1)."""
    mx.random.seed(7)
    bn = gluon.nn.BatchNorm(in_channels=channels)
    bn.initialize(mx.init.Uniform(0.5))
    return bn


def params_of(block):
    return [(p.data(), p.grad() if p.grad_req != "null" else None) for p in block.collect_params().values()]


def test_backward_in_graph_skips_an_op_ordered_before_the_head_but_not_read_by_it():
    """Fuzz seed 6541. A BatchNorm called twice under record(); backward() from the second
    call. The two calls share the running statistics, so the graph orders them (a control
    dependency), and MXNet's gradient pass took that order for a path: the first call's
    backward ran too and updated the running variance again (0.81 vs eager's 0.9)."""
    def prog(x):
        bn = batchnorm(4, x.shape)
        with autograd.record():
            for _ in range(2):
                y = bn(x)
        y.backward()
        return y, params_of(bn)

    r = run_both(prog, nd.array(rand(4, 4, seed=1)))
    assert_same(*r)
    assert r.stats["backward_in_graph"] == 1, r.stats

