"""A trace replayed op by op (after a refused graph, or for an op that cannot run in one) must
give eager's values: each op sees the same arrays, aliased as eagerly, in the same order.
Programs shrunk from fuzz seeds (tests/stress/repros/), each compared with eager MXNet.
"""
import mxnet as mx
from mxnet import autograd, nd

from conftest import assert_same, rand, run_both


def test_update_of_a_recorded_result_written_into_its_own_array():
    """Fuzz seed 10460. `w = x * 1` then nag_mom_update(w, w, m, out=w): the trace runs op by op
    (one array as two inputs), but the replay computed w into a temporary, so the kernel saw
    weight and gradient apart from its output; MXNet's NAG kernel reads the gradient again
    after writing the weight, so the momentum differed (eager -1.15, jit 0.93). The learning
    rate is test_fuzz_found.py's: another one would make it a lifted input at the shared site."""
    def prog(x, mom, x2, mom2):
        w = nd.reshape(nd.mean(x, axis=0), shape=(-1,))
        g = w.as_in_context(mx.cpu(0))  # the array itself
        nd.nag_mom_update(w, g, mom, lr=1.0, momentum=0.9, out=w)
        w2 = x2 * 1
        nd.nag_mom_update(w2, w2, mom2, lr=1.0, momentum=0.9, out=w2)
        del w2  # dead: only the momentum, updated in place, is observed
        return w, mom, mom2

    r = run_both(prog, nd.array(rand(5, 20, seed=1) * 2), nd.array(rand(20, seed=2)),
                 nd.array(rand(6, seed=3)), nd.array(rand(6, seed=4)))
    assert_same(*r)


def test_refused_write_into_a_recorded_result_is_seen_by_its_backward():
    """Fuzz seeds 30580 and 20220. Under record(), writing a result in place (y /= 2, y[:] = v)
    raises, but MXNet runs the write first; eagerly, the recorded sigmoid then computes its
    gradient from the written output. jit() had run the forward as a graph whose fused backward
    recomputes the sigmoid: x.grad 4.09 (jit) vs 4.97 (eager) on seed 30580."""
    def prog(x, w):
        events = []
        x.attach_grad(grad_req="add")
        with autograd.record():
            y = nd.sigmoid(x)
            z = (((y + 2.0) + y) * x) + 7.5
            try:
                y /= 2.0
            except mx.base.MXNetError as e:
                events.append(type(e).__name__)
            d = nd.Activation(nd.FullyConnected(x, w, num_hidden=2, no_bias=True), act_type="sigmoid")
            try:
                d[:] = -1.5
            except mx.base.MXNetError as e:
                events.append(type(e).__name__)
        autograd.backward([z, y, d])
        return events, y, z, d, x.grad

    r = run_both(prog, nd.array(rand(2, 3, seed=5) * 2), nd.array(rand(2, 3, seed=6)))
    assert r.eager[0] == ["MXNetError", "MXNetError"]
    assert_same(*r)
