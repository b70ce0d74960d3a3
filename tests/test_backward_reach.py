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


def test_backward_by_mxnet_through_a_graph_runs_only_what_the_head_depends_on():
    """Fuzz seeds 10235, 29290, 17956, 32638. A recorded graph runs as one node of MXNet's
    autograd graph, whose backward runs the backward of every op in it. With heads that depend
    on only some of its results, eager's backward visits fewer ops: jit() updated a BatchNorm's
    running statistics (10235), and wrote zeros into the gradient of a variable the head did not
    depend on (29290: 0.0 vs eager's 2.4958556)."""
    def prog(x, w, b):
        bn = batchnorm(4, x.shape)
        for a in (x, w):
            a.attach_grad()
        with autograd.record():
            h = nd.relu(x)
            flat = nd.flatten(h)
            y = bn(h)
        g = autograd.grad(flat, [x])  # explicit variables: MXNet's backward
        with autograd.record():
            f = nd.flip(x, axis=1)
            o = nd.FullyConnected(f, w, b, num_hidden=1)
        o.backward(retain_graph=True)  # writes w.grad
        with autograd.record():
            o2 = (f * f).sum()
        o2.backward()  # through flip only: w.grad stays
        return g, y, flat, o, o2, x.grad, w.grad, params_of(bn)

    r = run_both(prog, nd.array(rand(5, 4, 2, seed=2)), nd.array(rand(1, 8, seed=3)),
                 nd.array(rand(1, seed=4)))
    assert_same(*r)


def test_graph_run_before_its_backward_leaves_the_gradient_of_a_variable_its_head_skips():
    """The forward runs before any backward (here a read cuts it), so the heads of a later
    backward are not known: a variable that not every held result depends on would have its
    gradient overwritten with zeros by a backward from the others (o.grad 0.0 vs eager's 3.0)."""
    def prog(f, c0, o):
        for a in (f, c0, o):
            a.attach_grad()
        with autograd.record():
            z = o * 3.0
        z.backward()  # o.grad = 3
        with autograd.record():
            c = f * c0 + 0.5
            h = o * c * 2.0
        seen = c.asnumpy()  # runs the forward now
        c.backward()
        return seen, c, h, f.grad, c0.grad, o.grad

    r = run_both(prog, *[nd.array(rand(3, 4, seed=s)) for s in (8, 9, 10)])
    assert_same(*r)
