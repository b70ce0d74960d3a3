"""Plain scripts found by the fuzz runs of 2026-11-24 (seeds 200000+ and 300000+) where jit()
changed a result: each runs eagerly and under jit(), compared."""
import pytest
from mxnet import autograd, nd

import minpy_jit
from conftest import arr, assert_same, rand, run_both


@pytest.fixture
def fuse_off():
    previous = minpy_jit.config()["fuse"]
    minpy_jit.config(fuse=False)  # MXNet's own op writes the array (our kernels are covered)
    yield
    minpy_jit.config(fuse=previous)


@pytest.mark.parametrize("write", ["div", "tanh_out", "tanh_out_recorded"])
def test_in_place_write_of_a_concat_result(write, fuse_off):
    """Fuzz seeds 205983 and 208081. MXNet's oneDNN Concat of three parts along axis 1 leaves
    its result in oneDNN's own memory layout. Writing that array in place (x /= 0.5,
    tanh(x, out=x)) in a compiled graph read it as plain memory: CachedOp resets an output's
    layout before the node writing it runs, and that output is the node's own input. Eager's
    op reads a default-layout copy."""
    def fn(a, b, c):
        x = nd.concat(a, b, c, dim=1)
        x.wait_to_read()  # the concat runs in a graph of its own, before the write
        y = x * 1  # read in the writing graph, before the write
        if write == "div":
            x /= 0.5
        elif write == "tanh_out":
            nd.tanh(x, out=x)
        else:
            with autograd.record():
                nd.tanh(x, out=x)
        return x, y

    res = run_both(fn, arr(rand(2, 1, seed=1)), arr(rand(2, 2, seed=2)), arr(rand(2, 3, seed=3)))
    assert_same(res.eager, res.jitted)


def test_multi_sgd_mom_update_given_a_view_of_its_own_weight():
    """Fuzz seed 203364: the third weight's gradient is a row of the first weight, which the
    same call updates. MXNet's kernel walks the weights element by element, so it reads that
    row after writing part of it; our multi-tensor kernel read it before. MXNet's op runs
    such a call (counted)."""
    def fn(w0, g0, m0, w1, g1, m1, w2, m2):
        g2 = w0[3]  # a view of w0
        nd.multi_sgd_mom_update(w0, g0, m0, w1, g1, m1, w2, g2, m2, out=[w0, w1, w2],
                                lrs=(0.5, 0.5, 0.5), wds=(0.01, 0.01, 0.01), momentum=0.9, num_weights=3)
        return w0, m0, w1, m1, w2, m2

    shapes = [(5, 2, 2), (5, 2, 2), (5, 2, 2), (1,), (1,), (1,), (2, 2), (2, 2)]
    args = [arr(rand(*s, seed=k)) for k, s in enumerate(shapes)]
    res = run_both(fn, *args)
    assert_same(res.eager, res.jitted)
    assert res.stats["fallback_reasons"] == {
        "multi_sgd_mom_update: reads a view of an array it updates": 1}
