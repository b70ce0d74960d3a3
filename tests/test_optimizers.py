"""Every optimizer Trainer users pick runs its step as one multi-tensor kernel call, bit for bit
equal to eager MXNet.

* Kernels: each `_minpy_multi_*_update` against the MXNet op it stands in for (AdaGrad: against
  MXNet's Python update), called directly, weights updated in place or not, float16 weights
  with float32 master copies for the multi_precision forms.
* Runtime: 50 steps under jit() against eager, in the Trainer form (Gluon net, Trainer.step)
  and in the direct op form (per-weight update ops), with weight decay, gradient clipping,
  rescale_grad, learning rates that change every step (schedules, Adam's bias correction),
  float16 multi_precision; each step's updates are one kernel call, and the changing learning
  rate costs at most one recompile.
Comparisons are of bit patterns (+0 and -0 differ, NaNs of equal payload are equal).
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import minpy_jit
from conftest import BIG, arr, rand
from minpy_jit import _core, intercept


def bits(a):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits(eager, jitted, what=""):
    assert len(eager) == len(jitted), what
    for i, (e, j) in enumerate(zip(eager, jitted)):
        be, bj = bits(e), bits(j)
        assert be.shape == bj.shape, (what, i)
        if not np.array_equal(be, bj):
            ef, jf = np.asarray(e.asnumpy() if isinstance(e, nd.NDArray) else e, np.float64), \
                np.asarray(j.asnumpy() if isinstance(j, nd.NDArray) else j, np.float64)
            raise AssertionError("%s array %d: %d of %d elements differ (max abs diff %g)"
                                 % (what, i, int((be != bj).sum()), be.size, np.nanmax(np.abs(ef - jf))))


def exact(value, field=True):
    """The float32 MXNet computes with for a Python value given as an op attribute."""
    return _core.mx_float(str(value) if field else str(float(value)), not field)


def tuple_attr(values, field=True):
    return "(%s)" % ", ".join(exact(v, field) for v in values)


SHAPES = [(7, 5), (33,), (4, 4, 3), (1,)]  # odd sizes: vector loops' remainders


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts from an empty graph cache (it inspects the graphs it made) and may
    compile as many graphs at one jit() site as it needs."""
    old_limit = minpy_jit.config()["recompile_limit"]
    minpy_jit.clear_cache()
    minpy_jit.config(recompile_limit=BIG)
    yield
    minpy_jit.config(recompile_limit=old_limit)


# ================================================================ kernels against MXNet's ops

# name: (MXNet op, states per weight, float16 weights, hyper-parameters, our kernel, extra attrs)
KERNEL_CASES = {
    "sgd_update": (nd.sgd_update, 0, False, {}, "sgd", {"formula": "sgd_update"}),
    "sgd_mom_update": (nd.sgd_mom_update, 1, False, {"momentum": 0.9}, "sgd_mom", {}),
    "nag_mom_update": (nd.nag_mom_update, 1, False, {"momentum": 0.85}, "nag_mom", {}),
    "adam_update": (nd.adam_update, 2, False, {"beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6}, "adam", {}),
    "rmsprop_update": (nd.rmsprop_update, 1, False, {"gamma1": 0.9, "epsilon": 1e-6}, "rmsprop", {}),
    "rmsprop_update clip_weights": (nd.rmsprop_update, 1, False, {"gamma1": 0.9, "clip_weights": 0.4},
                                    "rmsprop", {}),
    "rmspropalex_update": (nd.rmspropalex_update, 3, False, {"gamma1": 0.9, "gamma2": 0.8, "epsilon": 1e-4},
                           "rmspropalex", {}),
    "mp_sgd_update": (nd.mp_sgd_update, 0, True, {}, "mp_sgd", {"formula": "sgd_update"}),
    "mp_sgd_mom_update": (nd.mp_sgd_mom_update, 1, True, {"momentum": 0.9}, "mp_sgd_mom", {}),
    "mp_nag_mom_update": (nd.mp_nag_mom_update, 1, True, {"momentum": 0.9}, "mp_nag_mom", {}),
}


def _weights(n_states, mp, seed):
    """Per weight: [weight, gradient, states...] (+ float32 master copy for mixed precision)."""
    rs = np.random.RandomState(seed)
    out = []
    for shape in SHAPES:
        w = rs.uniform(-1, 1, shape).astype(np.float32)
        wt = np.float16 if mp else np.float32
        item = [nd.array(w.astype(wt), dtype=wt)]
        states = [nd.array(np.abs(rs.uniform(0, 0.1, shape)).astype(np.float32)) for _ in range(n_states)]
        if mp:
            item += states + [nd.array(w.astype(np.float16).astype(np.float32))]
        else:
            item += states
        out.append(item)
    return out


def _grads(mp, seed):
    rs = np.random.RandomState(seed)
    return [nd.array(rs.uniform(-1, 1, s).astype(np.float16 if mp else np.float32),
                     dtype=np.float16 if mp else np.float32) for s in SHAPES]


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "new-array"])
@pytest.mark.parametrize("clip", [None, 0.05])
@pytest.mark.parametrize("name", sorted(KERNEL_CASES))
def test_kernel_matches_mxnet_op(name, clip, in_place):
    op, n_states, mp, hyper, rule, extra = KERNEL_CASES[name]
    lr, wd, rescale = 4.367506679241648e-05, 0.0123, 0.5  # an lr MXNet parses to another float than strtof
    ref, ours = _weights(n_states, mp, 1), _weights(n_states, mp, 1)
    kw = dict(hyper, lr=lr, wd=wd, rescale_grad=rescale)
    if clip is not None:
        kw["clip_gradient"] = clip
    attrs = dict(num_weights=len(SHAPES), lrs=tuple_attr([lr] * len(SHAPES)), wds=tuple_attr([wd] * len(SHAPES)),
                 rescale_grad=exact(rescale), clip_gradient=exact(-1 if clip is None else clip), **extra)
    attrs.update({k: exact(v) for k, v in hyper.items()})
    kernel = getattr(nd._internal, "_minpy_multi_%s_update" % rule)
    for step in range(5):
        g = _grads(mp, 100 + step)
        outs_ref = [w[0] if in_place else nd.zeros(w[0].shape, dtype=w[0].dtype) for w in ref]
        for item, gi, o in zip(ref, g, outs_ref):
            op(item[0], gi, *item[1:], out=o, **kw)
        outs = [w[0] if in_place else nd.zeros(w[0].shape, dtype=w[0].dtype) for w in ours]
        flat = []
        for item, gi in zip(ours, g):
            flat += [item[0], gi] + item[1:]
        kernel(*flat, out=outs, **attrs)
        assert_bits(outs_ref, outs, "%s step %d: new weights" % (name, step))
        assert_bits([a for it in ref for a in it[1:]], [a for it in ours for a in it[1:]],
                    "%s step %d: states" % (name, step))
        if not in_place:  # the next step starts from the new weights
            for item, o in zip(ref, outs_ref):
                item[0] = o
            for item, o in zip(ours, outs):
                item[0] = o


def test_kernel_hyper_parameters_as_inputs():
    """hyper_inputs=1: one float32 array of 3 per weight holds its lr, wd and rescale_grad."""
    lrs = [0.1, 0.0031622776601683794, 1e-3, 0.7]
    wds = [0.01, 0.0, 4.367506679241648e-05, 0.3]
    rescales = [1.0, 0.125, 1 / 3, 2.5]
    ref, ours = _weights(2, False, 3), _weights(2, False, 3)
    g = _grads(False, 4)
    for item, gi, lr, wd, rescale in zip(ref, g, lrs, wds, rescales):
        nd.adam_update(item[0], gi, item[1], item[2], out=item[0], lr=lr, wd=wd, rescale_grad=rescale)
    flat = [a for item, gi in zip(ours, g) for a in [item[0], gi] + item[1:]]
    hyper = [nd.array([float(exact(v)) for v in vs], dtype=np.float32) for vs in zip(lrs, wds, rescales)]
    nd._internal._minpy_multi_adam_update(*(flat + hyper), out=[it[0] for it in ours], num_weights=4,
                                          hyper_inputs=1)
    assert_bits([a for it in ref for a in it], [a for it in ours for a in it])


def test_kernel_float16_rounding_matches_cast():
    """float32 -> float16 of the mixed-precision kernels: round to nearest even, as MXNet's Cast."""
    edges = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20, 65519, 65520, 1e6, -1e6,
                      2 ** -24, 2 ** -25, 3 * 2 ** -26, 2 ** -14 - 2 ** -25, 6e-8, 0.0, -0.0, np.inf, -np.inf],
                     dtype=np.float32)
    rs = np.random.RandomState(5)
    x = np.concatenate([edges, rs.standard_normal(100000).astype(np.float32) * 10 ** rs.uniform(-9, 5, 100000)
                        .astype(np.float32)]).astype(np.float32)
    # mp_sgd with lr 0, wd 0: the weight is the master copy, rounded to float16
    w16, g16 = nd.zeros(x.shape, dtype=np.float16), nd.zeros(x.shape, dtype=np.float16)
    w32 = nd.array(x)
    nd._internal._minpy_multi_mp_sgd_update(w16, g16, w32, out=[w16], num_weights=1, lrs="(0,)", wds="(0,)",
                                            formula="sgd_update")
    assert_bits([nd.array(x).astype(np.float16)], [w16])
    nan_out = nd.zeros((1,), dtype=np.float16)
    nd._internal._minpy_multi_mp_sgd_update(nan_out, nd.zeros((1,), dtype=np.float16), nd.array([np.nan]),
                                            out=[nan_out], num_weights=1, lrs="(0,)", wds="(0,)",
                                            formula="sgd_update")
    assert np.isnan(nan_out.asnumpy()).all()


def test_kernel_rejects_wrong_dtype_with_a_clear_error():
    w, g, m = nd.ones((3,), dtype=np.float64), nd.ones((3,), dtype=np.float64), nd.zeros((3,), dtype=np.float64)
    with pytest.raises(mx.base.MXNetError, match="_minpy_multi_nag_mom_update: input 0 must be float32"):
        nd._internal._minpy_multi_nag_mom_update(w, g, m, num_weights=1, lrs="(0.1,)", wds="(0,)").wait_to_read()


# ================================================================ AdaGrad (a Python update in MXNet)

def _adagrad_pair(kw):
    opt = mx.optimizer.AdaGrad(**kw)
    return opt, [arr(rand(*s, seed=i)) for i, s in enumerate(SHAPES)], [nd.zeros(s) for s in SHAPES]


@pytest.mark.parametrize("kw", [dict(learning_rate=0.1), dict(learning_rate=0.05, wd=0.01, clip_gradient=0.3,
                                                                rescale_grad=0.25, eps=1e-5),
                                dict(learning_rate=0.1, clip_gradient=0)],
                         ids=["plain", "wd-clip-rescale-eps", "clip-0"])
def test_adagrad_kernel_matches_python_update(kw):
    """The kernel against MXNet's own AdaGrad.update (eleven ops per weight), 20 steps."""
    opt_e, we, he = _adagrad_pair(kw)
    opt_j, wj, hj = _adagrad_pair(kw)
    before = minpy_jit.stats()
    for step in range(20):
        grads = [arr(rand(*s, seed=50 + step * 7 + i)) for i, s in enumerate(SHAPES)]
        for i, (w, g, h) in enumerate(zip(we, grads, he)):
            opt_e.update(i, w, g, h)
        with minpy_jit.jit():
            for i, (w, g, h) in enumerate(zip(wj, grads, hj)):
                opt_j.update(i, w, g, h)
        assert_bits(we + he, wj + hj, "step %d" % step)
    # each step's trace is the one kernel call, launched directly (flush.cc)
    after = minpy_jit.stats()
    assert after["update_flushes_direct"] - before["update_flushes_direct"] == 20, after
    assert after["fused_kernels"] - before["fused_kernels"] == 20, after


def test_adagrad_update_outside_our_kernel_is_mxnets():
    """float64 weights: MXNet's own update runs (and is recorded op by op); still exact."""
    opt_e, opt_j = mx.optimizer.AdaGrad(learning_rate=0.1), mx.optimizer.AdaGrad(learning_rate=0.1)
    we = [arr(rand(4, 3, seed=1, dtype=np.float64))]
    wj = [w.copy() for w in we]
    he, hj = [nd.zeros((4, 3), dtype=np.float64)], [nd.zeros((4, 3), dtype=np.float64)]
    g = arr(rand(4, 3, seed=2, dtype=np.float64))
    opt_e.update(0, we[0], g, he[0])
    with minpy_jit.jit():
        opt_j.update(0, wj[0], g, hj[0])
    assert "_minpy_multi_adagrad_update" not in minpy_jit.last_graph()
    assert_bits(we + he, wj + hj)
    assert not intercept.hooks_active()


# ================================================================ runtime: Trainer, 50 steps

def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu", in_units=12), nn.Dense(12, activation="relu", in_units=16),
            nn.Dense(4, in_units=12))
    return net


def _schedule():
    return mx.lr_scheduler.FactorScheduler(step=1, factor=0.97)


TRAINER_CASES = [
    ("sgd", dict(learning_rate=0.1)),
    ("sgd", dict(learning_rate=0.1, wd=0.01, rescale_grad=0.5, schedule=True)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=1e-3, clip_gradient=0.05, schedule=True)),
    ("nag", dict(learning_rate=0.05, momentum=0.9)),
    ("nag", dict(learning_rate=0.05, momentum=0.9, wd=1e-3, clip_gradient=0.1, schedule=True)),
    ("nag", dict(learning_rate=0.05, wd=1e-3)),  # no momentum: NAG calls sgd_update
    ("adam", dict(learning_rate=0.01)),
    ("adam", dict(learning_rate=0.01, wd=1e-3, clip_gradient=0.1, beta1=0.8, schedule=True)),
    ("rmsprop", dict(learning_rate=0.01, wd=1e-3)),
    ("rmsprop", dict(learning_rate=0.01, clip_gradient=0.2, clip_weights=0.5, schedule=True)),
    ("rmsprop", dict(learning_rate=0.01, centered=True, wd=1e-3)),
    ("adagrad", dict(learning_rate=0.1)),
    ("adagrad", dict(learning_rate=0.1, wd=1e-3, clip_gradient=0.5, schedule=True)),
]


def _trainer_run(use_jit, opt, kw, steps=50, batches=(8, 8, 6)):
    """An MLP trained for `steps` steps; the batch size cycles (rescale_grad = 1/batch)."""
    mx.random.seed(7)
    net = _mlp()
    net.initialize(mx.init.Xavier())
    kw = dict(kw)
    if kw.pop("schedule", False):
        kw["lr_scheduler"] = _schedule()
    rs = np.random.RandomState(8)
    data = [(nd.array(rs.randn(b, 12).astype(np.float32)), nd.array(rs.randint(0, 4, b).astype(np.float32)))
            for b in batches]
    net(data[0][0])
    trainer = gluon.Trainer(net.collect_params(), opt, kw)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for step in range(steps):
        x, y = data[step % len(data)]
        with minpy_jit.jit() if use_jit else _nothing():
            with autograd.record():
                loss = lossfn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
        losses.append(loss)
    return losses, [p.data() for p in net.collect_params().values()], _states(trainer, net.collect_params())


def _states(trainer, params):
    """Optimizer states in the order of the parameters (the Trainer numbers parameters by sorted
    name, and names carry a global counter: two runs may number the same parameter differently)."""
    out = []
    for p in params.values():
        s = trainer._updaters[0].states[trainer._param2idx[p.name]]
        for a in (s if isinstance(s, (list, tuple)) else [s]):
            out += [b for b in (a if isinstance(a, (list, tuple)) else [a]) if b is not None]
    return out


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _kernel_calls_per_update_graph():
    """Our update kernels in each cached graph that has one."""
    counts = []
    for g in minpy_jit.graphs():
        lines = [ln for ln in g["ir"].splitlines() if not ln.lstrip().startswith("|")]
        n = sum(1 for ln in lines if "= _minpy_multi_" in ln)
        if n:
            counts.append(n)
    return counts


@pytest.mark.parametrize("opt,kw", TRAINER_CASES,
                         ids=["%s-%s" % (o, "-".join(sorted(k))) for o, k in TRAINER_CASES])
def test_trainer_50_steps_bit_exact(opt, kw):
    eager = _trainer_run(False, opt, kw)
    before = minpy_jit.stats()
    jitted = _trainer_run(True, opt, kw)
    after = minpy_jit.stats()
    assert_bits(eager[0], jitted[0], "losses")
    assert_bits(eager[1], jitted[1], "weights")
    assert_bits(eager[2], jitted[2], "optimizer states")
    assert after["fallbacks"] == before["fallbacks"] and after["eager_replays"] == before["eager_replays"]
    # one kernel call per step for all 6 parameters; graphs: a handful, not one per step
    assert _kernel_calls_per_update_graph() and set(_kernel_calls_per_update_graph()) == {1}, minpy_jit.last_graph()
    # ... run in a graph, or launched directly (nothing recorded before the step, update_launch.h)
    direct = after["trainer_updates"]["direct"] - before["trainer_updates"]["direct"]
    assert after["fused_kernels"] - before["fused_kernels"] + direct >= 50
    assert after["cache_misses"] - before["cache_misses"] <= 12, after


def _trainer_run_changing(use_jit, opt, kw, steps=50):
    """An MLP on one batch shape, Trainer.step(n) with n changing every step (rescale_grad =
    1/n: a count of valid samples) and the weight decay changed every step (a schedule set on
    the optimizer), 5 steps with both unchanged first. Also returns the cache misses after the
    first step (which creates the optimizer's states: graphs of its own)."""
    mx.random.seed(7)
    net = _mlp()
    net.initialize(mx.init.Xavier())
    rs = np.random.RandomState(8)
    x, y = nd.array(rs.randn(8, 12).astype(np.float32)), nd.array(rs.randint(0, 4, 8).astype(np.float32))
    net(x)
    trainer = gluon.Trainer(net.collect_params(), opt, dict(kw, wd=1e-3))
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for step in range(steps):
        if step == 1:
            misses_before = minpy_jit.stats()["cache_misses"]
        if step >= 5:
            trainer._optimizer.wd = 1e-3 * (1 + 0.37 * step)
        with minpy_jit.jit() if use_jit else _nothing():
            with autograd.record():
                loss = lossfn(net(x), y)
            loss.backward()
            trainer.step(8 if step < 5 else 1 + step % 13)
        losses.append(loss)
    misses = minpy_jit.stats()["cache_misses"] - misses_before
    return losses, [p.data() for p in net.collect_params().values()], _states(trainer, net.collect_params()), misses


CHANGING_CASES = [
    ("sgd", dict(learning_rate=0.1)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, clip_gradient=0.05)),
    ("nag", dict(learning_rate=0.05, momentum=0.9)),
    ("nag", dict(learning_rate=0.05)),
    ("adam", dict(learning_rate=0.01)),
    ("rmsprop", dict(learning_rate=0.01, clip_weights=0.5)),
    ("rmsprop", dict(learning_rate=0.01, centered=True)),
    ("adagrad", dict(learning_rate=0.1, clip_gradient=0.5)),
]


@pytest.mark.parametrize("opt,kw", CHANGING_CASES,
                         ids=["%s-%s" % (o, "-".join(sorted(k))) for o, k in CHANGING_CASES])
def test_trainer_changing_rescale_grad_and_wd_compile_once(opt, kw):
    """rescale_grad (Trainer.step's batch size) and wd changing at every step of a whole-step
    graph (forward, backward and the update in one): bit for bit, and a graph input once they
    changed (one recompile), not a graph a step: from the second step on, the step's graph and
    the one with the values lifted (before the lift: 46 misses, a graph a step)."""
    eager = _trainer_run_changing(False, opt, kw)
    before = minpy_jit.stats()
    jitted = _trainer_run_changing(True, opt, kw)
    after = minpy_jit.stats()
    assert_bits(eager[0], jitted[0], "losses")
    assert_bits(eager[1], jitted[1], "weights")
    assert_bits(eager[2], jitted[2], "optimizer states")
    assert after["fallbacks"] == before["fallbacks"] and after["eager_replays"] == before["eager_replays"]
    assert after["trainer_updates"]["python"] == before["trainer_updates"]["python"], after["trainer_updates"]
    assert set(_kernel_calls_per_update_graph()) == {1}, minpy_jit.last_graph()
    assert jitted[3] <= 2, (jitted[3], after)


@pytest.mark.parametrize("aggregate", ["0", "1", "4", "60"])
def test_trainer_sgd_any_aggregation_size_is_one_kernel(aggregate, monkeypatch):
    """MXNET_OPTIMIZER_AGGREGATION_SIZE decides how many weights MXNet's SGD hands one
    multi_sgd_mom_update (0: one update call per weight); the step is one kernel call anyway."""
    monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", aggregate)
    kw = dict(learning_rate=0.1, momentum=0.9, wd=1e-3)
    eager = _trainer_run(False, "sgd", kw, steps=10)
    jitted = _trainer_run(True, "sgd", kw, steps=10)
    assert_bits(eager[1] + eager[2], jitted[1] + jitted[2])
    assert set(_kernel_calls_per_update_graph()) == {1}, minpy_jit.last_graph()


# ================================================================ runtime: float16 multi_precision

MP_CASES = [
    ("sgd", dict(learning_rate=0.1)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=1e-3, clip_gradient=0.5, schedule=True)),
    ("nag", dict(learning_rate=0.1, momentum=0.9, wd=1e-3, schedule=True)),
    ("adam", dict(learning_rate=0.01, wd=1e-3, schedule=True)),  # MXNet: Cast, adam_update on the master, Cast
]


def _mp_run(use_jit, opt, kw, steps=50):
    """float16 parameters (their float32 master copies in the optimizer), gradients given."""
    rs = np.random.RandomState(0)
    params = gluon.ParameterDict("mp_")
    for i, s in enumerate(SHAPES + [(64, 64)]):
        p = params.get("w%d" % i, shape=s, dtype=np.float16)
        p.initialize(mx.init.Constant(0))
        p.set_data(nd.array(rs.uniform(-1, 1, s), dtype=np.float16))
    kw = dict(kw, multi_precision=True)
    if kw.pop("schedule", False):
        kw["lr_scheduler"] = _schedule()
    trainer = gluon.Trainer(params, opt, kw)
    for step in range(steps):
        for p in params.values():
            p.grad()[:] = nd.array(rs.uniform(-1, 1, p.shape), dtype=np.float16)
            p.data()._fresh_grad = True
        with minpy_jit.jit() if use_jit else _nothing():
            trainer.step(4)
    return [p.data() for p in params.values()], _states(trainer, params)


@pytest.mark.parametrize("opt,kw", MP_CASES, ids=["%s-%s" % (o, "-".join(sorted(k))) for o, k in MP_CASES])
def test_trainer_multi_precision_float16_50_steps(opt, kw):
    eager = _mp_run(False, opt, kw)
    before = minpy_jit.stats()
    jitted = _mp_run(True, opt, kw)
    after = minpy_jit.stats()
    assert all(w.dtype == np.float16 for w in jitted[0])
    assert_bits(eager[0], jitted[0], "float16 weights")
    assert_bits(eager[1], jitted[1], "states and float32 master copies")
    # each step's update one kernel call: in a graph, or a trace of it launched directly
    assert set(_kernel_calls_per_update_graph()) <= {1}, minpy_jit.last_graph()
    assert after["fused_kernels"] - before["fused_kernels"] + after["trainer_updates"]["direct"] \
        - before["trainer_updates"]["direct"] >= 50, after


# ================================================================ runtime: the direct op form

def _per_weight(op, **fixed):
    """An update op called once per weight (w, g, states...), in place; h: lr, wd, rescale_grad."""
    def update(ws, gs, ss, h):
        for w, g, s in zip(ws, gs, ss):
            op(w, g, *s, out=w, **dict(fixed, **h))
    return update


def _multi(op, **fixed):
    """One of MXNet's multi-tensor ops over all weights (lrs=, wds= lists), in place."""
    def update(ws, gs, ss, h):
        flat = [a for w, g, s in zip(ws, gs, ss) for a in [w, g] + s]
        op(*flat, out=ws, num_weights=len(ws), lrs=[h["lr"]] * len(ws), wds=[h["wd"]] * len(ws),
           rescale_grad=h["rescale_grad"], **fixed)
    return update


# name: (update over all weights, states per weight, float16 weights with float32 master copies)
OP_FORMS = {
    "sgd_update": (_per_weight(nd.sgd_update), 0, False),
    "sgd_mom_update": (_per_weight(nd.sgd_mom_update, momentum=0.9, clip_gradient=0.3), 1, False),
    "nag_mom_update": (_per_weight(nd.nag_mom_update, momentum=0.9), 1, False),
    "adam_update": (_per_weight(nd.adam_update, clip_gradient=0.2), 2, False),
    "rmsprop_update": (_per_weight(nd.rmsprop_update, gamma1=0.9), 1, False),
    "rmspropalex_update": (_per_weight(nd.rmspropalex_update, gamma1=0.9, gamma2=0.8), 3, False),
    "mp_sgd_update": (_per_weight(nd.mp_sgd_update), 0, True),
    "mp_sgd_mom_update": (_per_weight(nd.mp_sgd_mom_update, momentum=0.9), 1, True),
    "mp_nag_mom_update": (_per_weight(nd.mp_nag_mom_update, momentum=0.9, clip_gradient=0.3), 1, True),
    "multi_sgd_update": (_multi(nd.multi_sgd_update), 0, False),
    "multi_sgd_mom_update": (_multi(nd.multi_sgd_mom_update, momentum=0.9), 1, False),
    "multi_mp_sgd_update": (_multi(nd.multi_mp_sgd_update), 0, True),
    "multi_mp_sgd_mom_update": (_multi(nd.multi_mp_sgd_mom_update, momentum=0.9, clip_gradient=0.3), 1, True),
}


@pytest.fixture(params=["direct", "graph"])
def update_launch(request):
    """Update-only traces launched directly (the default, flush.cc), or run as graphs."""
    previous = minpy_jit.config()["direct_updates"]
    minpy_jit.config(direct_updates=request.param == "direct")
    yield request.param
    minpy_jit.config(direct_updates=previous)


@pytest.mark.parametrize("changing", ["nothing", "lr", "wd", "rescale_grad", "all"])
@pytest.mark.parametrize("name", sorted(OP_FORMS))
def test_update_ops_50_steps_bit_exact(name, changing, update_launch):
    """Update ops over 5 weights, 50 steps, bit for bit. Each step's trace is one update: it
    runs as one kernel call, launched directly or as a graph. A learning rate, weight decay or
    rescale_grad drawn at random every step (an 11% chance each that MXNet's parse of a value
    differs from strtof) is a graph input once it changed: one recompile, not fifty."""
    update, n_states, mp = OP_FORMS[name]
    draws = {k: np.random.RandomState(seed) for k, seed in (("lr", 3), ("wd", 4), ("rescale_grad", 5))}
    fixed = {"lr": 0.05, "wd": 1e-3, "rescale_grad": 0.5}

    def hyper():
        h = {"lr": float(10 ** draws["lr"].uniform(-4, -1) * draws["lr"].rand()),
             "wd": float(10 ** draws["wd"].uniform(-5, -2)),
             "rescale_grad": 1.0 / draws["rescale_grad"].randint(1, 257)}
        return {k: h[k] if changing in (k, "all") else fixed[k] for k in h}

    wtype = np.float16 if mp else np.float32

    def state():
        ws = [arr(rand(*s, seed=i)) for i, s in enumerate(SHAPES + [(64, 64)])]
        ss = [[nd.zeros(w.shape) for _ in range(n_states)] + ([w.copy()] if mp else []) for w in ws]
        return [w.astype(wtype) for w in ws], ss

    (we, se), (wj, sj) = state(), state()
    before = minpy_jit.stats()
    for step in range(50):
        h = hyper()
        grads = [arr(rand(*w.shape, seed=1000 + step * 10 + i)).astype(wtype) for i, w in enumerate(we)]
        update(we, grads, se, h)
        with minpy_jit.jit():
            update(wj, grads, sj, h)
        assert_bits(we + sum(se, []), wj + sum(sj, []), "step %d" % step)
    after = minpy_jit.stats()
    assert after["cache_misses"] - before["cache_misses"] <= 2, after
    assert after["fused_kernels"] - before["fused_kernels"] == 50
    assert after["fallbacks"] == before["fallbacks"] and after["eager_replays"] == before["eager_replays"]
    direct = after["update_flushes_direct"] - before["update_flushes_direct"]
    if update_launch == "direct":
        assert direct == 50 and after["executions"] == before["executions"], after
    else:
        assert direct == 0 and set(_kernel_calls_per_update_graph()) == {1}, after
