"""Per-weight optimizer updates gathered at call time into one direct launch (cpp/src/update_batch.h).

`nd.sgd_mom_update(w, g, m, out=w, ...)` once per weight, with nothing else pending, joins the
thread's batch instead of the trace; the batch is launched before anything else happens. Every
test runs the same code eagerly and under jit() and compares bit patterns: the batch must be
invisible except in speed -- across reads, later ops, repeated weights, other attributes,
threads, errors, fragments and a refused launch.
"""
import threading

import mxnet as mx
import numpy as np
import pytest
from mxnet import nd

import minpy_jit
from conftest import arr, jit_or_eager, rand


def bits(a):
    a = a.asnumpy()
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def assert_bits(eager, jitted):
    assert len(eager) == len(jitted)
    for i, (e, j) in enumerate(zip(eager, jitted)):
        assert e.shape == j.shape and e.dtype == j.dtype, i
        assert np.array_equal(bits(e), bits(j)), "array %d differs" % i


def weights(n, shape=(8, 5), seed=0):
    """n (weight, gradient, momentum) triples, fresh arrays."""
    ws = [arr(rand(*shape, seed=seed + i)) for i in range(n)]
    gs = [arr(rand(*shape, seed=seed + 100 + i)) for i in range(n)]
    ms = [arr(rand(*shape, seed=seed + 200 + i)) for i in range(n)]
    return ws, gs, ms


def both(fn, n=6, shape=(8, 5)):
    """fn(ws, gs, ms) eagerly and inside jit(), from equal arrays; the stats delta of the jit run."""
    eager, jitted = weights(n, shape), weights(n, shape)
    fn(*eager)
    nd.waitall()
    before = minpy_jit.stats()
    with minpy_jit.jit():
        fn(*jitted)
    nd.waitall()
    after = minpy_jit.stats()
    assert_bits(sum(eager, []), sum(jitted, []))
    delta = {k: after[k] - before[k] for k in ("update_flushes_direct", "cache_misses", "eager_replays",
                                               "ops_recorded")}
    delta["fallbacks"] = sum(after["fallbacks"].values()) - sum(before["fallbacks"].values())
    return delta


def sgd_mom(w, g, m, lr=0.1, **kw):
    nd.sgd_mom_update(w, g, m, lr=lr, momentum=kw.pop("momentum", 0.9), out=w, **kw)


def test_updates_of_a_step_are_one_launch():
    d = both(lambda ws, gs, ms: [sgd_mom(w, g, m, wd=1e-3, rescale_grad=0.5) for w, g, m in zip(ws, gs, ms)])
    assert d == {"update_flushes_direct": 1, "cache_misses": 0, "eager_replays": 0, "ops_recorded": 6,
                 "fallbacks": 0}


def test_long_batches_launch_every_segment_ops_weights():
    old = minpy_jit.config()["segment_ops"]
    minpy_jit.config(segment_ops=4)
    try:
        d = both(lambda ws, gs, ms: [sgd_mom(w, g, m) for w, g, m in zip(ws, gs, ms)], n=10)
    finally:
        minpy_jit.config(segment_ops=old)
    assert d["update_flushes_direct"] == 3 and d["cache_misses"] == 0  # 4 + 4 + 2


def test_large_weights_launch_every_64k_elements():
    """Weights of 4096 elements: a launch every 16 (what the kernel has left after the last call
    is on the step's critical path), whatever segment_ops says."""
    d = both(lambda ws, gs, ms: [sgd_mom(w, g, m) for w, g, m in zip(ws, gs, ms)], n=40, shape=(64, 64))
    assert d["update_flushes_direct"] == 3 and d["cache_misses"] == 0  # 16 + 16 + 8


def test_a_weight_updated_twice_sees_its_first_update():
    def two_steps(ws, gs, ms):
        for _ in range(2):
            for w, g, m in zip(ws, gs, ms):
                sgd_mom(w, g, m)
    d = both(two_steps)
    assert d["update_flushes_direct"] == 2 and d["cache_misses"] == 0


def test_a_gradient_that_is_another_weight_starts_a_new_launch():
    def chained(ws, gs, ms):
        sgd_mom(ws[0], gs[0], ms[0])
        sgd_mom(ws[1], ws[0], ms[1])  # reads weight 0 after its update, as eagerly
    d = both(chained)
    assert d["update_flushes_direct"] == 2


def test_per_weight_learning_rates_share_a_launch_other_momentum_does_not():
    def mixed(ws, gs, ms):
        for i, (w, g, m) in enumerate(zip(ws, gs, ms)):
            sgd_mom(w, g, m, lr=0.01 * (i + 1), momentum=0.9 if i < 3 else 0.5)
    d = both(mixed)
    assert d["update_flushes_direct"] == 2 and d["cache_misses"] == 0


def test_reads_and_later_ops_see_the_updated_weights():
    seen = {}

    def update_then_use(ws, gs, ms):
        for w, g, m in zip(ws, gs, ms):
            sgd_mom(w, g, m)
        seen.setdefault("reads", []).append(ws[0].asnumpy().copy())  # a read inside the scope
        sgd_mom(ws[1], gs[1], ms[1])
        ws[2][:] = ws[1] * 2 + ms[3]  # an op after the updates: the batch runs first

    d = both(update_then_use)
    assert np.array_equal(seen["reads"][0].view(np.uint32), seen["reads"][1].view(np.uint32))
    assert d["fallbacks"] == 0 and d["eager_replays"] == 0


def test_updates_after_other_ops_are_recorded_with_them():
    def op_first(ws, gs, ms):
        ms[0][:] = gs[0] * 0.5
        for w, g, m in zip(ws, gs, ms):
            sgd_mom(w, g, m)
    d = both(op_first)
    assert d["update_flushes_direct"] == 1 and d["fallbacks"] == 0  # the trace's flush launches them


@pytest.mark.parametrize("name,extra", [
    ("sgd_update", {}), ("sgd_mom_update", {"momentum": 0.9, "clip_gradient": 0.3}),
    ("nag_mom_update", {"momentum": 0.9}), ("rmsprop_update", {"gamma1": 0.9}),
])
def test_each_kind_in_batches_with_a_read_between(name, extra):
    op = getattr(nd, name)

    def run(ws, gs, ms):
        for step in range(3):
            for w, g, m in zip(ws, gs, ms):
                if name == "sgd_update":
                    op(w, g, lr=0.05, wd=1e-4, out=w, **extra)
                else:
                    op(w, g, m, lr=0.05, wd=1e-4, out=w, **extra)
            ws[step].wait_to_read()
    d = both(run)
    assert d["update_flushes_direct"] == 3 and d["cache_misses"] == 0


def test_mixed_precision_updates():
    def make(seed):
        w32 = [arr(rand(6, 4, seed=seed + i)) for i in range(4)]
        return ([w.astype("float16") for w in w32], [arr(rand(6, 4, seed=50 + i)).astype("float16") for i in range(4)],
                [nd.zeros((6, 4)) for _ in range(4)], w32)
    eager, jitted = make(0), make(0)
    for run, (ws, gs, ms, w32) in ((False, eager), (True, jitted)):
        with jit_or_eager(run):
            for w, g, m, master in zip(ws, gs, ms, w32):
                nd.mp_sgd_mom_update(w, g, m, master, lr=0.1, momentum=0.9, out=w)
    assert_bits(sum(eager, []), sum(jitted, []))


def test_wrong_shapes_raise_as_without_the_batch():
    """A gradient of another shape never joins: the recording path raises what it raises for
    that call, and the updates gathered before it still run."""
    ws, gs, ms = weights(3)
    bad = nd.zeros((5, 8))
    expected = weights(3)
    sgd_mom(expected[0][0], expected[1][0], expected[2][0])
    with pytest.raises(Exception) as err:
        with minpy_jit.jit():
            sgd_mom(ws[0], gs[0], ms[0])
            sgd_mom(ws[1], bad, ms[1])
    assert "sgd_mom_update" in str(err.value)
    assert_bits([expected[0][0], expected[0][1], expected[2][1]], [ws[0], ws[1], ms[1]])


def test_an_attribute_mxnet_refuses_raises_mxnets_error():
    ws, gs, ms = weights(2)
    with pytest.raises(mx.base.MXNetError) as eager_err:
        nd.sgd_mom_update(ws[0], gs[0], ms[0], lr=0.1, momentum="fast", out=ws[0])
    with pytest.raises(mx.base.MXNetError) as jit_err:
        with minpy_jit.jit():
            nd.sgd_mom_update(ws[1], gs[1], ms[1], lr=0.1, momentum="fast", out=ws[1])
    # the recording path's OpInputError (an MXNetError) naming the op, with MXNet's own message
    mxnet_message = str(eager_err.value).replace("MXNetError: ", "")
    assert "sgd_mom_update" in str(jit_err.value) and mxnet_message in str(jit_err.value)


def test_an_exception_in_the_block_keeps_the_updates_made_before_it():
    eager, jitted = weights(4), weights(4)
    for w, g, m in zip(*eager):
        sgd_mom(w, g, m)
    with pytest.raises(KeyError):
        with minpy_jit.jit():
            for w, g, m in zip(*jitted):
                sgd_mom(w, g, m)
            raise KeyError("user code fails after the updates")
    assert_bits(sum(eager, []), sum(jitted, []))


def test_a_refused_launch_records_the_calls_instead():
    """direct_updates turned off while a batch is gathered: its push is refused, and the calls
    are recorded and run as a graph, with the same bits."""
    eager, jitted = weights(5), weights(5)
    for w, g, m in zip(*eager):
        sgd_mom(w, g, m)
    before = minpy_jit.stats()
    try:
        with minpy_jit.jit():
            for w, g, m in zip(*jitted):
                sgd_mom(w, g, m)
            minpy_jit.config(direct_updates=False)
    finally:
        minpy_jit.config(direct_updates=True)
    after = minpy_jit.stats()
    assert_bits(sum(eager, []), sum(jitted, []))
    assert after["update_flushes_direct"] == before["update_flushes_direct"]
    assert after["executions"] > before["executions"] and after["ops_recorded"] - before["ops_recorded"] == 5


def test_threads_gather_their_own_batches():
    n_threads, steps = 4, 10
    sets = [(weights(5, seed=10 * t), weights(5, seed=10 * t)) for t in range(n_threads)]
    for eager, _ in sets:
        for _ in range(steps):
            for w, g, m in zip(*eager):
                sgd_mom(w, g, m)
    errors = []

    def worker(jitted):
        try:
            for _ in range(steps):
                with minpy_jit.jit():
                    for w, g, m in zip(*jitted):
                        sgd_mom(w, g, m)
                    jitted[0][0].wait_to_read()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(j,)) for _, j in sets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for eager, jitted in sets:
        assert_bits(sum(eager, []), sum(jitted, []))


def test_a_fragment_after_updates_reads_the_updated_weights():
    @minpy_jit.function
    def scaled(w, m):
        return w * 2 + m

    def run(ws, gs, ms):
        for w, g, m in zip(ws, gs, ms):
            sgd_mom(w, g, m)
        ms[5][:] = scaled(ws[0], ms[1])

    both(run)
