"""Variables with grad_req='add' under jit(): gradients accumulate over backward() calls exactly as
eagerly, including where MXNet's own backward kernel ignores the request (clip)."""
import numpy as np
from mxnet import autograd, nd

from conftest import assert_same, rand, run_both


def test_clip_of_an_added_gradient_overwrites_it_as_eager():
    """Fuzz seeds 317469, 402635. MXNet's clip backward kernel writes its result whatever the
    request, so eagerly a grad_req='add' variable read only by clip has its gradient overwritten
    at every backward(), not summed. A fused unit (clip inside a recorded elementwise chain)
    reached the variable through _copy, which adds: 2.0 under jit() where eager read 1.0."""
    def prog(a, b, c):
        for x in (a, b, c):
            x.attach_grad(grad_req="add")
        seen = []
        for _ in range(2):
            with autograd.record():
                ya = nd.relu(nd.clip(a, -0.5, 0.5))                     # clip is a's only reader
                yb = nd.sigmoid(nd.clip(b, -0.5, 0.5) * -1.5) + 0.75
                yc = nd.relu(nd.clip(c, -0.5, 0.5)) + c                 # two readers: summed, added
            autograd.backward([ya, yb, yc], retain_graph=True)
            seen += [a.grad.copy(), b.grad.copy(), c.grad.copy()]
        return seen
    eager, jitted = run_both(prog, *[nd.array(rand(3, 4, seed=s)) for s in (1, 2, 3)])
    assert_same(eager, jitted)
    # the check has teeth: eager's second a.grad is its first, c.grad doubles
    np.testing.assert_array_equal(eager[3].asnumpy(), eager[0].asnumpy())
    np.testing.assert_allclose(eager[5].asnumpy(), 2 * eager[2].asnumpy())


def test_clip_of_a_written_gradient_still_fuses():
    """The exception is only for grad_req='add': a clip of an ordinary variable stays in the unit."""
    def prog(x):
        x.attach_grad()
        with autograd.record():
            y = nd.relu(nd.clip(x, -0.5, 0.5)) * 2.0
        y.backward()
        return x.grad, y
    r = run_both(prog, nd.array(rand(3, 4, seed=7)))
    assert_same(*r)
    assert r.stats["fused_ops"] >= 3
