"""Every op that ran eagerly is counted and explained: stats()['clean'] and verdict() never
claim a clean run when something was replayed or ran eagerly (in a callback, past the
recompile limit, in a view-aliasing flush, as an unrecordable op)."""
import io

import mxnet as mx
import pytest
from mxnet import nd

import minpy_jit


@pytest.fixture(autouse=True)
def _fresh():
    minpy_jit.clear_cache()
    minpy_jit.reset_stats()
    yield
    minpy_jit.clear_cache()


def test_clean_run_is_reported_clean():
    x = nd.ones((3, 4))
    with minpy_jit.jit():
        y = nd.relu(x * 2) + 1
    y.asnumpy()
    st = minpy_jit.stats()
    assert st["clean"] is True and st["executions"] > 0
    assert minpy_jit.verdict() == "minpy_jit: clean: every recorded op ran in a compiled graph"
    out = io.StringIO()
    minpy_jit.print_stats(out)
    assert out.getvalue().splitlines()[0] == minpy_jit.verdict()


def test_ops_in_a_kvstore_callback_are_not_a_clean_run():
    kv = mx.kv.create("local")
    kv.init(0, nd.zeros((3,)))
    kv._set_updater(lambda key, grad, weight: weight.__setitem__(slice(None), weight - grad * 0.5))

    def step():
        g = nd.ones((3,)) * 2
        kv.push(0, g)
        out = nd.zeros((3,))
        kv.pull(0, out=out)
        return out * 1

    ex = minpy_jit.explain(step)
    assert ex.result.asnumpy().tolist() == [-1.0, -1.0, -1.0]
    assert any(r.endswith(": inside an MXNet C callback") for r in ex.fallback_reasons), ex.fallback_reasons
    assert "inside an MXNet C callback" in str(ex)
    st = minpy_jit.stats()
    assert st["clean"] is False
    assert minpy_jit.verdict().startswith("minpy_jit: NOT clean: ") and "inside an MXNet C callback" in minpy_jit.verdict()


def test_site_past_the_recompile_limit_counts_its_ops():
    old = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=1)
    try:
        for n in range(1, 5):
            x = nd.ones((n, 2))
            with minpy_jit.jit(site="storm"):
                y = nd.tanh(x) + n
            y.asnumpy()
    finally:
        minpy_jit.config(recompile_limit=old)
    st = minpy_jit.stats()
    assert st["sites"]["storm"]["eager"] is True
    reasons = {r: k for r, k in st["fallback_reasons"].items() if "recompile limit" in r}
    assert reasons and st["clean"] is False, st["fallback_reasons"]
    assert "storm" in minpy_jit.verdict()


def test_eager_replay_is_not_clean():
    x = nd.arange(8)
    with minpy_jit.jit():
        v = x[2:6]  # a view: an in-place write through it replays eagerly
        v += 1
        x += 2
    assert x.asnumpy().tolist() == [2, 3, 5, 6, 7, 8, 8, 9]
    st = minpy_jit.stats()
    assert st["eager_replays"] >= 1 and st["clean"] is False
    assert "replayed op by op" in minpy_jit.verdict()
