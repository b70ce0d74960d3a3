"""Long traces run in segments (config segment_ops): MXNet executes one segment while Python
records the next. Every test compares with eager MXNet; the segment structure (how many cuts,
which graphs repeat, how the recompile limit counts them) is asserted from stats()."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd

import minpy_jit
from conftest import arr, assert_same, here, rand, run_both, run_eager

pytestmark = pytest.mark.usefixtures("isolated_runtime")


def chain(x, steps):
    for _ in range(steps):
        x = nd.relu(x * 1.01 + 0.5)
    return x


def test_long_chain_runs_in_segments_with_eager_results():
    minpy_jit.config(segment_ops=30)
    res = run_both(lambda x: chain(x, 100), arr(rand(8, 8)))
    assert_same(res.eager, res.jitted)
    # 300 ops, period 3: a cut after the op like the first once 30 are recorded (31 ops a
    # segment); whether the scope exit finds ops left depends on how the scalars were recorded
    assert res.stats["flushes"]["segment"] in (9, 10), res.stats["flushes"]
    assert res.stats["ops_recorded"] == 300


def test_a_loop_repeats_its_segments_so_they_hit_the_cache():
    """The cut falls at the same place of each iteration: the middle segments are one graph."""
    minpy_jit.config(segment_ops=30)
    minpy_jit.clear_cache()
    x0 = arr(rand(8, 8))
    ref = run_eager(lambda x: chain(x, 100), x0)
    misses = []
    for _ in range(3):
        before = minpy_jit.stats()["cache_misses"]
        with minpy_jit.jit():
            y = chain(x0, 100)
        assert_same(ref, y)
        misses.append(minpy_jit.stats()["cache_misses"] - before)
    # first segment, the repeated middle one, the tail: three graphs, then only hits
    assert misses == [3, 0, 0], misses


def test_off_gives_one_graph():
    minpy_jit.config(segment_ops=0)
    res = run_both(lambda x: chain(x, 100), arr(rand(8, 8)))
    assert_same(res.eager, res.jitted)
    assert res.stats["flushes"] == {"scope exit": 1}


def test_without_a_repeating_op_the_cut_comes_at_twice_segment_ops():
    minpy_jit.config(segment_ops=10)

    def fn(x):
        for i in range(45):  # every op differs from the first (distinct shapes)
            x = nd.concat(x, nd.slice_axis(x, axis=1, begin=0, end=1), dim=1) if i % 2 else nd.sin(x)
        return x

    res = run_both(fn, arr(rand(2, 2)))
    assert_same(res.eager, res.jitted)
    assert res.stats["flushes"].get("segment", 0) >= 2, res.stats["flushes"]


def test_recorded_trace_is_not_cut_into_segments():
    """48 recorded ops with segment_ops=16: a segment flushed before its backward is known would
    run with each op its own autograd node, unfused (a zero-gradient op recorded later must see
    eager's structure), so a trace recorded under autograd is not cut: it runs at backward() as
    one graph (w, read 12 times, keeps the backward with MXNet's autograd). Gradients as eager's."""
    minpy_jit.config(segment_ops=16)
    w0 = rand(6, 6, seed=1)
    x0 = rand(4, 6, seed=2)

    def step(jit):
        w = arr(w0)
        w.attach_grad()
        x = arr(x0)
        scope = minpy_jit.jit() if jit else _nothing()
        with scope:
            with autograd.record():
                h = x
                for _ in range(12):
                    h = nd.tanh(nd.dot(h, w) * 0.5 + 0.1)
                loss = (h * h).sum()
            loss.backward()
        return loss.asnumpy(), w.grad.asnumpy()

    (l_e, g_e), before = step(False), minpy_jit.stats()
    l_j, g_j = step(True)
    after = minpy_jit.stats()
    assert after["flushes"].get("segment", 0) == before["flushes"].get("segment", 0)
    assert after["per_op_autograd"] == before["per_op_autograd"]
    np.testing.assert_allclose(l_j, l_e, rtol=1e-6)
    np.testing.assert_allclose(g_j, g_e, rtol=1e-5, atol=1e-7)


def _nothing():
    import contextlib
    return contextlib.nullcontext()


def test_lstm_cell_loop_in_segments_equals_eager():
    """W4's shape: 40 steps of an LSTMCell (13 ops a step) in segments of 64 ops (the default)."""
    minpy_jit.config(segment_ops=64)
    mx.random.seed(0)
    cell = gluon.rnn.LSTMCell(32, input_size=16)
    cell.initialize(mx.init.Xavier())
    xs = [arr(rand(4, 16, seed=s)) for s in range(40)]
    h0, c0 = nd.zeros((4, 32)), nd.zeros((4, 32))

    def loop():
        states = [h0, c0]
        for x in xs:
            _, states = cell(x, states)
        return states

    ref = [s.asnumpy() for s in loop()]
    for _ in range(2):
        before = minpy_jit.stats()
        with minpy_jit.jit():
            got = loop()
        after = minpy_jit.stats()
        for a, b in zip(ref, got):
            # fused sigmoid/tanh are within 1 ulp of MXNet's; 40 recurrent steps compound it
            np.testing.assert_allclose(b.asnumpy(), a, rtol=1e-5, atol=1e-6)
    # 520 ops: a first segment of 66 (it ends with the first op of a step, like the scope's
    # first op), then 6 of 65 (5 steps each); the last 64 ops at scope exit
    assert after["flushes"]["segment"] - before["flushes"].get("segment", 0) == 7
    assert after["cache_misses"] == before["cache_misses"]  # the second pass only hits


def test_many_distinct_segments_in_one_scope_are_not_a_recompile_storm(capsys):
    """A scope that always runs as the same 12 different segments compiles each once: the
    recompile limit counts graphs per flush position within the scope, not per scope."""
    minpy_jit.config(segment_ops=20, recompile_limit=3)
    inputs = [arr(rand(n + 1, 3, seed=n)) for n in range(12)]

    def fn(*xs):
        return [chain(x, 10) for x in xs]  # 30 ops per shape: a cut after each shape's chain

    ref = run_eager(fn, *inputs)
    site = "test_segments.py:%d" % (here() + 2)
    for _ in range(2):
        with minpy_jit.jit():
            got = fn(*inputs)
        assert_same(ref, got)
    sites = minpy_jit.stats()["sites"]
    assert sites[site]["eager"] is False and sites[site]["compiles"] == 12, sites
    assert "WARNING" not in capsys.readouterr().err


def test_a_storm_at_one_segment_position_is_still_caught(capsys):
    minpy_jit.config(segment_ops=20, recompile_limit=3)
    site = "test_segments.py:%d" % (here() + 4)
    x_fixed = arr(rand(4, 4))
    for n in range(2, 9):
        x = arr(rand(n, 3, seed=n))
        with minpy_jit.jit():
            a = chain(x_fixed, 10)  # the same first segment every time
            b = chain(x, 10)        # a new shape every time: a storm at flush #2
        assert_same(run_eager(lambda u, v: [chain(u, 10), chain(v, 10)], x_fixed, x), [a, b])
    sites = minpy_jit.stats()["sites"]
    assert sites[site]["eager"] is True, sites
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "WARNING" in ln]
    assert len(warnings) == 1 and "flush #2" in warnings[0], warnings


# ------------------------------------------------------------------ background launches

def _updates(ws, gs, ms):
    for w, g, m in zip(ws, gs, ms):
        nd.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9, out=w)


def _params(n, seed):
    return [arr(rand(4, 4, seed=seed + i)) for i in range(n)]


def _copies(arrays):
    return [a.copy() for a in arrays]


def _state_and_reference(n=150):
    """Weights, gradients and momenta for n updates, and copies of weights and momenta for eager."""
    ws, gs, ms = _params(n, 0), _params(n, 1000), _params(n, 2000)
    return ws, gs, ms, _copies(ws), _copies(ms)


def _scoped(fn, *args):
    with minpy_jit.jit():
        fn(*args)


def _launches(fn):
    before = minpy_jit.stats()["background_launches"]
    fn()
    return minpy_jit.stats()["background_launches"] - before


@pytest.fixture
def update_graphs():
    """Segments of updates run as graphs (what the launcher thread hands MXNet), not launched
    directly (flush.cc: a trace that is one update is, by default)."""
    minpy_jit.config(direct_updates=False)


@pytest.mark.parametrize("background", [True, False])
def test_segments_handed_over_in_the_background_equal_eager(background, update_graphs):
    """W5's shape: segments of 64 in-place updates hit the cache and are handed to MXNet by the
    launcher thread (async_launch); weights and momenta equal eager's after every step."""
    minpy_jit.config(async_launch=background)
    ws, gs, ms, ref_w, ref_m = _state_and_reference()
    launches = 0
    for step in range(4):
        _updates(ref_w, gs, ref_m)
        launches += _launches(lambda: _scoped(_updates, ws, gs, ms))
        assert_same(ref_w + ref_m, ws + ms)
    # 150 updates: two full segments of 64 (the second is the first's graph again, a cache hit
    # even in step 1) go to the launcher; the tail of 22 runs at scope exit. Step 1 compiles
    # its first segment, so 1 + 2 + 2 + 2 launches.
    assert launches == (7 if background else 0), launches


def test_segments_of_updates_launched_directly_equal_eager():
    """The same updates with the default config: each segment (and the tail at scope exit) is one
    update over arrays made before it, launched directly as one engine operation (flush.cc):
    no graph, no launcher thread; weights and momenta equal eager's after every step."""
    ws, gs, ms, ref_w, ref_m = _state_and_reference()
    before = minpy_jit.stats()
    for step in range(4):
        _updates(ref_w, gs, ref_m)
        _scoped(_updates, ws, gs, ms)
        assert_same(ref_w + ref_m, ws + ms)
    after = minpy_jit.stats()
    assert after["update_flushes_direct"] - before["update_flushes_direct"] == 4 * 3, after
    assert after["executions"] == before["executions"] and after["background_launches"] == 0, after
    assert after["fused_kernels"] - before["fused_kernels"] == 4 * 3, after


def test_reading_mid_scope_waits_for_background_launches():
    ws, gs, ms, ref_w, ref_m = _state_and_reference()
    for _ in range(3):
        _updates(ref_w, gs, ref_m)
        with minpy_jit.jit():
            _updates(ws, gs, ms)
            # a segment of this step may still be on its way to MXNet: the read waits for it
            first, last_seen = ws[0].asnumpy(), ws[100].asnumpy()
        np.testing.assert_array_equal(first, ref_w[0].asnumpy())
        np.testing.assert_array_equal(last_seen, ref_w[100].asnumpy())


def test_an_eager_fallback_after_background_launches_sees_their_results():
    ws, gs, ms, ref_w, ref_m = _state_and_reference()
    mask = nd.array([1, 0, 1, 1])
    for _ in range(3):
        _updates(ref_w, gs, ref_m)
        ref = nd.contrib.boolean_mask(ref_w[70], mask)
        with minpy_jit.jit():
            _updates(ws, gs, ms)
            got = nd.contrib.boolean_mask(ws[70], mask)  # no graph form: runs eagerly, in order
        assert_same(ref, got)
    assert minpy_jit.stats()["fallbacks"].get("_contrib_boolean_mask", 0) >= 3


def test_another_thread_reading_during_a_scope_sees_launched_segments():
    import threading
    ws, gs, ms, ref_w, ref_m = _state_and_reference()
    for _ in range(2):
        _updates(ref_w, gs, ref_m)
    seen = {}
    _scoped(_updates, ws, gs, ms)  # the second step's segments then hit the cache
    with minpy_jit.jit():
        _updates(ws, gs, ms)
        reader = threading.Thread(target=lambda: seen.update(w=ws[10].asnumpy()))
        reader.start()
        reader.join()
    np.testing.assert_array_equal(seen["w"], ref_w[10].asnumpy())


def test_an_error_in_the_block_after_background_launches_keeps_their_results(update_graphs):
    """Ops recorded before the error ran, as they would have eagerly; nothing is left queued."""
    ws, gs, ms, ref_w, ref_m = _state_and_reference()
    for step in range(3):
        _updates(ref_w, gs, ref_m)
        with pytest.raises(ZeroDivisionError):
            with minpy_jit.jit():
                _updates(ws, gs, ms)
                1 / 0
        assert minpy_jit._core.pending() == 0
        assert_same(ref_w + ref_m, ws + ms)
    assert minpy_jit.stats()["background_launches"] >= 4


def test_segments_under_numpy_shape_semantics_run_on_the_recording_thread():
    """np_shape mode is per thread in MXNet: such segments are not handed to the launcher."""
    ws, gs, ms, ref_w, ref_m = _state_and_reference()
    with mx.util.np_shape(True):
        for _ in range(3):
            _updates(ref_w, gs, ref_m)
            launches = _launches(lambda: _scoped(_updates, ws, gs, ms))
            assert launches == 0
            assert_same(ref_w + ref_m, ws + ms)



_FAILED_LAUNCH_CHILD = r'''
import sys, threading
import numpy as np, mxnet as mx
from mxnet import nd
import minpy_jit

A_DRAINS_FIRST = sys.argv[1] == "a"
gate = {"fail": False}
b_warm, in_forward, b_queued, first_drained = (threading.Event() for _ in range(4))


class Boom(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        if gate["fail"]:  # on the launcher thread (NaiveEngine runs the op where it is pushed)
            in_forward.set()
            b_queued.wait(10)  # B's segments queue up behind this launch, which then fails
            raise RuntimeError("boom")
        self.assign(out_data[0], req[0], in_data[0] * 2)


@mx.operator.register("boom")
class BoomProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["data"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Boom()


minpy_jit.config(segment_ops=3)
xs = [nd.array(np.random.RandomState(i).uniform(-1, 1, (3,))) for i in range(140)]
ys = [nd.array(np.random.RandomState(1000 + i).uniform(-1, 1, (3,))) for i in range(140)]
result = {}


def thread_a():  # a step a segment handing MXNet 141 arrays (background launches); one fails
    acc = nd.zeros((3,))
    try:
        with minpy_jit.jit(site="a"):
            for step in range(15):
                if step == 12:
                    acc.wait_to_read()
                    b_warm.wait(10)
                    gate["fail"] = True
                acc = acc + nd.Custom(nd.add_n(*xs) - acc, op_type="boom")
            if not A_DRAINS_FIRST:
                first_drained.wait(10)
        result["a"] = "no error"
    except mx.MXNetError as e:
        result["a"] = str(e)
    first_drained.set()


def thread_b():  # its own work, launched in the background too, behind A's failing launch
    acc, want = nd.zeros((3,)), nd.zeros((3,))
    for step in range(15):
        want = want + (nd.add_n(*ys) - want) * 2
    try:
        with minpy_jit.jit(site="b"):
            for step in range(15):
                if step == 12:
                    acc.wait_to_read()
                    b_warm.set()
                    in_forward.wait(10)
                acc = acc + (nd.add_n(*ys) - acc) * 2
            b_queued.set()
            if A_DRAINS_FIRST:
                first_drained.wait(10)
        result["b"] = "same" if np.array_equal(acc.asnumpy(), want.asnumpy()) else "DIFFERENT: %s, eager %s" % (
            acc.asnumpy(), want.asnumpy())
    except mx.MXNetError as e:
        result["b"] = str(e)
    first_drained.set()


threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert in_forward.is_set() and minpy_jit.stats()["background_launches"] >= 6, "not launched in the background"
assert "CustomOpForward" in result["a"], result  # A's own error (its launch's, or its pending step's)
assert result["b"] == "same", result
print("ok")
'''


@pytest.mark.parametrize("first", ["a", "b"])
def test_a_failed_background_launch_is_its_own_threads_error_and_skips_no_other_threads_work(first, tmp_path):
    """One launcher thread runs every thread's background segments. A launch of thread A fails
    (a CustomOp raising under NaiveEngine, which runs it on the launcher thread) while thread B's
    segments are queued behind it. Before, every later job was skipped, B's included, and the
    error went to whichever thread drained first: B then read arrays never written (garbage, no
    error) when A drained first, and B got A's error while A's scope ended without one when B
    did. Now A's failure skips only A's later segments and is A's error; B's values equal eager's.
    When B drains first, B's read also flushes A's pending step, whose CustomOp fails again: that
    error was raised in B too, and is now kept for A (ThreadState::foreign_flush_error).
    A child process (NaiveEngine is chosen at start-up), killed if it hangs."""
    import os
    import subprocess
    import sys
    script = tmp_path / "failed_launch.py"
    script.write_text(_FAILED_LAUNCH_CHILD)
    env = dict(os.environ, MXNET_ENGINE_TYPE="NaiveEngine")
    try:
        done = subprocess.run([sys.executable, str(script), first], env=env, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("two threads with a failing background launch did not finish in 120 s")
    assert done.returncode == 0 and done.stdout.rstrip().endswith("ok"), done.stdout + done.stderr[-3000:]
