"""A trace replayed op by op (after a refused graph, or for an op that cannot run in one) must
give eager's values: each op sees the same arrays, aliased as eagerly, in the same order.
Programs shrunk from fuzz seeds (tests/stress/repros/), each compared with eager MXNet.
"""
import mxnet as mx
from mxnet import nd

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

