"""Ops that MXNet runs from its own C callbacks, and arrays on host contexts other than cpu().

MXNet calls Python back through ctypes in several places: a kvstore's updater (run inside
MXKVStorePush / PushPull, on the calling thread; what a Trainer over several contexts uses by
default), a CustomOp's forward and backward (on MXNet's worker threads), monitor callbacks. An
exception raised in such a callback is printed ("Exception ignored on calling ctypes callback")
and dropped by ctypes, and MXNet carries on as if the callback had run. So an op recorded there
would be lost or run too late (MXNet reads the callback's results as soon as it returns): ops
called from a callback run eagerly, are counted as fallbacks ("inside an MXNet C callback"), and
whatever the callback raises is exactly what eager MXNet would have seen.

Each test runs the same code eagerly and under jit() and compares.
"""
import contextlib
import subprocess
import sys
import textwrap

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd

import minpy_jit
from conftest import assert_same
from minpy_jit import intercept

CALLBACK = "inside an MXNet C callback"
TOL = dict(rtol=1e-5, atol=1e-7)  # lifted optimizer updates round differently (see test_training.py)


def J(use_jit):
    return minpy_jit.jit() if use_jit else contextlib.nullcontext()


@pytest.fixture(autouse=True)
def _clean_state():
    minpy_jit.clear_cache()
    minpy_jit.reset_stats()
    old = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=10 ** 9)
    yield
    minpy_jit.config(recompile_limit=old)
    assert minpy_jit._core.pending() == 0 and not intercept.hooks_active()


def callback_fallbacks(st):
    return {k: n for k, n in st["fallback_reasons"].items() if k.endswith(": " + CALLBACK)}


# ------------------------------------------------------------------ host contexts

def test_multi_sgd_update_weight_on_cpu_pinned_gradient_on_cpu():
    """What a kvstore's updater does: the stored weight lives on cpu_pinned(0), the merged
    gradient on cpu(0). Eager MXNet treats both as host memory; so must jit()."""
    def run(use_jit):
        w = nd.zeros((10,), ctx=mx.cpu_pinned(0))
        g = nd.ones((10,))
        with J(use_jit):
            nd.multi_sgd_update(w, g, out=[w], lrs=(0.1,), wds=(0.0,), num_weights=1)
            nd.sgd_update(w, g, out=w, lr=0.5)
            nd.sgd_mom_update(w, g, nd.zeros((10,), ctx=mx.cpu_pinned(0)), out=w, lr=0.25, momentum=0.9)
        return w
    want, got = run(False), run(True)
    assert_same(want, got)
    assert got.asnumpy()[0] == pytest.approx(-0.85)


def _host_arrays():
    return dict(pinned=nd.array([1.0, -2.0, 3.0], ctx=mx.cpu_pinned(0)),
                shared=nd.array([0.5, 0.25, -1.0], ctx=mx.Context("cpu_shared", 0)),
                cpu1=nd.array([2.0, 2.0, -2.0], ctx=mx.cpu(1)),
                cpu0=nd.array([1.0, 1.0, 1.0]))


def test_results_of_ops_on_pinned_and_shared_inputs_live_where_eager_puts_them():
    """MXNet runs an op on its first input's context, with pinned and shared memory mapped to
    plain cpu(dev_id) ("non-default context does not propagate")."""
    def run(use_jit):
        a = _host_arrays()
        with J(use_jit):
            out = [a["pinned"] * 2, nd.relu(a["pinned"]), a["shared"] + 1, a["cpu1"] + a["pinned"],
                   a["pinned"] + a["cpu1"], a["pinned"] * a["shared"], nd.zeros((2,), ctx=mx.cpu_pinned(0)),
                   nd.dot(a["pinned"].reshape((1, 3)), a["cpu0"].reshape((3, 1)))]
            out.append(out[0] + a["cpu0"])
        return out
    assert_same(run(False), run(True))


def test_in_place_writes_into_pinned_arrays():
    def run(use_jit):
        a = _host_arrays()
        w = a["pinned"]
        with J(use_jit):
            w += a["cpu0"]
            w[:] = w * 3
            nd.relu(w, out=w)
            a["cpu0"][:] = w + 1
        return [w, a["cpu0"]]
    assert_same(run(False), run(True))


def test_inputs_on_different_host_contexts_fall_back_counted():
    a = _host_arrays()
    with minpy_jit.jit():
        y = a["cpu1"] + a["cpu0"]
    assert y.context == mx.cpu(1) and y.asnumpy().tolist() == [3.0, 3.0, -1.0]
    assert minpy_jit.stats()["fallback_reasons"] == {"broadcast_add: inputs on different contexts": 1}


def test_multi_sgd_update_on_pinned_memory_runs_our_kernel_directly():
    """A kvstore's stored weights are on cpu_pinned(0). A multi-weight update of pinned arrays was
    expanded into per-weight ops whose first results are on cpu (pinned memory does not
    propagate), and the next op mixing them with the pinned inputs raised ('lifted form
    broadcast_mul is not recordable'); then MXNet's op ran it. Now our kernel, which reads any
    CPU memory, runs it as one engine operation, launched as it is called (nothing is recorded
    before it: the mixed-context add after it flushed), in place, with eager's values."""
    def run(use_jit):
        pinned = mx.cpu_pinned(0)
        rs = np.random.RandomState(1)
        w = [nd.array(rs.randn(5).astype(np.float32), ctx=pinned) for _ in range(2)]
        g = [nd.array(rs.randn(5).astype(np.float32), ctx=pinned) for _ in range(2)]
        seen = []
        with J(use_jit):
            for lr in (0.1, 0.2):
                nd.multi_sgd_update(w[0], g[0], w[1], g[1], out=w, num_weights=2, lrs=(lr, lr),
                                    wds=(0.0, 0.01), rescale_grad=0.5)
                seen.append(w[0] * 2 + w[1])  # recorded: the jit run compiles graphs around the updates
        return w, seen
    want = run(False)
    minpy_jit.reset_stats()
    got = run(True)
    assert_same(want, got)
    st = minpy_jit.stats()
    assert st["executions"] > 0, st
    assert not any(r.startswith("multi_sgd_update") for r in st["fallback_reasons"]), st["fallback_reasons"]
    assert st["trainer_updates"]["direct"] == 2, st["trainer_updates"]


# ------------------------------------------------------------------ Trainer over several contexts

CTXS = [mx.cpu(0), mx.cpu(1)]
MULTI = [(kv, uok, opt, kw) for kv in ("local", "device") for uok in (True, False)
         for opt, kw in (("sgd", {"learning_rate": 0.1}),
                         ("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                         ("adam", {"learning_rate": 0.01}))]


def _train_on_two_contexts(use_jit, opt, kw, kvstore, update_on_kvstore, steps=5):
    mx.random.seed(3)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier(), ctx=CTXS)
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (4, 5)))
    y = nd.array([0, 1, 2, 1])
    xs, ys = [x.as_in_context(c) for c in CTXS], [y.as_in_context(c) for c in CTXS]
    for xc in xs:
        net(xc)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), opt, dict(kw), kvstore=kvstore,
                            update_on_kvstore=update_on_kvstore)
    history = []
    with J(use_jit):
        for _ in range(steps):
            with autograd.record():
                losses = [lossfn(net(a), b) for a, b in zip(xs, ys)]
            for loss in losses:
                loss.backward()
            trainer.step(4)
            history.append([p.data(c).asnumpy() for p in net.collect_params().values() for c in CTXS])
    return history


@pytest.mark.parametrize("kvstore,update_on_kvstore,opt,kw", MULTI,
                         ids=["%s-%s-%s%s" % (kv, "kvupdate" if u else "localupdate", o, "-mom" if "momentum" in k else "")
                              for kv, u, o, k in MULTI])
def test_trainer_over_two_contexts_equals_eager_after_every_step(kvstore, update_on_kvstore, opt, kw):
    unraisable = []
    old_hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        want = _train_on_two_contexts(False, opt, kw, kvstore, update_on_kvstore)
        minpy_jit.reset_stats()
        got = _train_on_two_contexts(True, opt, kw, kvstore, update_on_kvstore)
    finally:
        sys.unraisablehook = old_hook
    assert not unraisable, [u.exc_value for u in unraisable]
    for step, (w, g) in enumerate(zip(want, got)):
        for i, (a, b) in enumerate(zip(w, g)):
            np.testing.assert_allclose(b, a, err_msg="step %d, array %d" % (step, i), **TOL)
    st = minpy_jit.stats()
    # Recorded and run (as graphs, or replayed op by op where one trace spans both contexts:
    # a CachedOp takes its inputs from one context only).
    assert st["ops_recorded"] > 0 and st["executions"] + st["eager_replays"] > 0
    if update_on_kvstore:
        # One push and one pull of every parameter a step; the optimizer ran between them, outside
        # the kvstore's callback (kvstore_updates.py), on the stored weights, which no graph takes
        # (they are on cpu_pinned(0); with 'device' the reduced gradients are on cpu(0) and cpu(1)):
        # eagerly and counted, or (SGD's multi_sgd ops) as our kernel launched directly.
        calls = st["kvstore"]["calls"]  # (and 'broadcast': the kvstore's initialisation)
        assert calls["push"] == calls["pull"] == 5 and "pushpull" not in calls, st["kvstore"]
        assert not callback_fallbacks(st), st["fallback_reasons"]
        assert st["fallbacks"] or st["trainer_updates"]["direct"], st


# ------------------------------------------------------------------ kvstore updaters

def _kv_run(use_jit, updater, pushes=3):
    kv = mx.kv.create("local")
    kv.init(0, nd.ones((2, 3)))
    kv.init(1, nd.zeros((4,)))
    kv._set_updater(updater)
    outs = [nd.zeros((2, 3)), nd.zeros((4,))]
    with J(use_jit):
        for step in range(pushes):
            g0 = nd.ones((2, 3)) * (step + 1)
            kv.push(0, [g0, g0 * 2])  # merged on the store, then the updater
            kv.push(1, nd.arange(4) - step)
            kv.pull(0, out=outs[0])
            kv.pull(1, out=outs[1])
            outs.append(outs[0] * 1)
    return outs


def test_kvstore_custom_python_updater():
    def updater(key, grad, weight):
        weight[:] = weight * 0.5 - nd.relu(grad) * 0.1 + key
    want = _kv_run(False, updater)
    got = _kv_run(True, updater)
    assert_same(want, got)
    assert callback_fallbacks(minpy_jit.stats())


def test_kvstore_updater_that_raises_behaves_as_eager():
    """ctypes prints and drops the exception, and MXNet carries on: the same under jit()."""
    def updater(key, grad, weight):
        weight[:] = weight + grad
        if key == 1:
            raise ValueError("updater failed for key %d" % key)

    def run(use_jit):
        seen = []
        old_hook, sys.unraisablehook = sys.unraisablehook, seen.append
        try:
            out = _kv_run(use_jit, updater)
        finally:
            sys.unraisablehook = old_hook
        return out, [(type(u.exc_value), str(u.exc_value)) for u in seen]
    (want, want_raised), (got, got_raised) = run(False), run(True)
    assert want_raised == [(ValueError, "updater failed for key 1")] * 3
    assert got_raised == want_raised
    assert_same(want, got)


def test_recorded_work_before_a_push_is_seen_by_the_updater():
    def run(use_jit):
        kv = mx.kv.create("local")
        kv.init(0, nd.zeros((3,)))
        seen = []
        kv._set_updater(lambda key, grad, weight: (seen.append(grad.asnumpy()), weight.__setitem__(slice(None), weight + grad)))
        out = nd.zeros((3,))
        with J(use_jit):
            g = nd.array([1.0, 2.0, 3.0])
            for _ in range(3):
                g = g * 2 + 1  # pending when push is called
                kv.push(0, g)
                kv.pull(0, out=out)
                g = g + out
        return [out, g, seen]
    want, got = run(False), run(True)
    assert_same(want, got)


# ------------------------------------------------------------------ CustomOp

class _ScaledTanh(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        y = nd.tanh(in_data[0]) * 2 + in_data[1]
        self.assign(out_data[0], req[0], y)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        t = nd.tanh(in_data[0])
        self.assign(in_grad[0], req[0], out_grad[0] * (1 - t * t) * 2)
        self.assign(in_grad[1], req[1], out_grad[0] * 1)


@mx.operator.register("minpy_test_scaled_tanh")
class _ScaledTanhProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data", "bias"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _ScaledTanh()


def test_custom_op_forward_backward_under_record():
    def run(use_jit):
        x = nd.array(np.random.RandomState(1).uniform(-1, 1, (4, 5)))
        b = nd.array(np.random.RandomState(2).uniform(-1, 1, (4, 5)))
        x.attach_grad()
        b.attach_grad()
        outs = []
        with J(use_jit):
            for step in range(3):
                with autograd.record():
                    y = nd.Custom(x * (step + 1), b, op_type="minpy_test_scaled_tanh")
                    z = nd.Custom(y, b, op_type="minpy_test_scaled_tanh").sum()
                z.backward()
                outs += [y, z, x.grad * 1, b.grad * 1]
                x -= x.grad * 0.1
        return outs + [x, b]
    assert_same(run(False), run(True))


def test_custom_op_without_record_and_in_hybridized_block():
    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, x, b):
            return F.Custom(x, b, op_type="minpy_test_scaled_tanh") * 3

    def run(use_jit):
        net = Net()
        net.hybridize(static_alloc=True)
        x = nd.array(np.random.RandomState(1).uniform(-1, 1, (4, 5)))
        b = nd.ones((4, 5))
        with J(use_jit):
            outs = []
            for _ in range(3):
                y = nd.Custom(x, b, op_type="minpy_test_scaled_tanh") + 1
                outs.append(net(y, b))
                x = outs[-1] / 4
        return outs
    assert_same(run(False), run(True))


def test_custom_op_that_raises_fails_as_eager():
    class Bad(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise RuntimeError("bad forward")

    @mx.operator.register("minpy_test_bad_forward")
    class BadProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Bad()

    def run(use_jit):
        keep = nd.ones((3,))
        with J(use_jit):
            keep += 1
            y = nd.Custom(keep, op_type="minpy_test_bad_forward")
        with pytest.raises(mx.MXNetError, match="CustomOpForward"):
            y.asnumpy()  # MXNet's error; the Python traceback itself is printed by MXNet
        return keep.asnumpy()
    np.testing.assert_array_equal(run(True), run(False))


# ------------------------------------------------------------------ threads and engines

_ENGINE_SCRIPT = textwrap.dedent("""
    import numpy as np, mxnet as mx, minpy_jit
    from mxnet import nd, autograd

    class Twice(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], nd.relu(in_data[0]) * 2)
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * (in_data[0] > 0) * 2)

    @mx.operator.register("twice")
    class TwiceProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)
        def list_arguments(self):
            return ["data"]
        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []
        def create_operator(self, ctx, shapes, dtypes):
            return Twice()

    def run(use_jit):
        xs = [nd.array(np.random.RandomState(i).uniform(-1, 1, (3,))) for i in range(140)]
        acc = nd.zeros((3,))
        outs = []
        with (minpy_jit.jit() if use_jit else open(__file__)):
            for step in range(12):
                # one segment a step, handing MXNet 141 arrays: launched in the background
                acc = acc + nd.Custom(nd.add_n(*xs) - acc, op_type="twice")
                outs.append(acc)
        return np.array([o.asnumpy() for o in outs])

    want = run(False)
    minpy_jit.config(segment_ops=3)
    got = run(True)
    assert np.allclose(want, got, rtol=1e-6), (want, got)
    st = minpy_jit.stats()
    assert st["background_launches"] > 0, st
    print("ok", st["background_launches"])
""")


@pytest.mark.parametrize("engine", ["ThreadedEnginePerDevice", "NaiveEngine"])
def test_custom_op_in_background_segments_does_not_deadlock(engine, tmp_path):
    """A CustomOp inside segments launched by the background thread: with the threaded engine
    its forward runs on MXNet's worker threads, with NaiveEngine on the launcher thread itself.
    Neither may wait for the other (a subprocess, so a deadlock fails by timeout)."""
    script = tmp_path / "engine.py"
    script.write_text(_ENGINE_SCRIPT)
    env = dict(__import__("os").environ, MXNET_ENGINE_TYPE=engine)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok ")
