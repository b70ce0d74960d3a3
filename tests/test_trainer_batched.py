"""Trainer._update done in one C call under jit() (minpy_jit/trainer.py, cpp/src/trainer_update.cc).

Each case trains the same parameters eagerly and under jit() for many steps and compares, bit for
bit, the weights, the optimizer states and every counter MXNet's Python keeps (update counts per
context, num_update, states_synced, fresh-gradient flags), and checks which path ran:
stats()['trainer_updates'] counts the steps done in C ('batched') and those left to MXNet's
Python by reason ('python').
"""
import warnings

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn
from mxnet.optimizer import optimizer as mx_opt

import minpy_jit
from conftest import jit_or_eager
from test_optimizers import assert_bits  # weights and states bit for bit, array by array


@pytest.fixture(autouse=True)
def _many_graphs():
    """Every test records from the same few lines: no site may run eagerly for its graph count."""
    old = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=10 ** 9)
    yield
    minpy_jit.config(recompile_limit=old)


def flat_states(trainer):
    """Every optimizer state array, updater by updater, index by index."""
    out = []
    for u in trainer._updaters:
        for k in sorted(u.states):
            stack = [u.states[k]]
            while stack:
                s = stack.pop(0)
                if isinstance(s, (list, tuple)):
                    stack = list(s) + stack
                elif s is not None:
                    out.append(s)
    return out


def counters(trainer):
    """What MXNet's Python bookkeeping leaves behind after a step."""
    opt = trainer._optimizer
    return dict(counts={k: dict(v) for k, v in opt._all_index_update_counts.items()},
                num_update=opt.num_update,
                synced=[dict(u.states_synced) for u in trainer._updaters],
                states=[sorted(u.states) for u in trainer._updaters],
                fresh=[[d._fresh_grad for d in p.list_data()] for p in trainer._params if p.grad_req != "null"])


class Setup:
    """Parameters of a small MLP on `ctxs`; each step runs forward, backward and `step`."""

    def __init__(self, opt, kw, ctxs=(mx.cpu(),), dtype=np.float32, trainer_kw=None, frozen=False, seed=3):
        mx.random.seed(seed)
        self.net = nn.HybridSequential(prefix="m_")  # the same names in every run (Trainer sorts them)
        with self.net.name_scope():
            self.net.add(nn.Dense(8, activation="relu", in_units=6), nn.Dense(5, in_units=8), nn.Dense(3, in_units=5))
        self.net.initialize(mx.init.Xavier(), ctx=list(ctxs))
        if dtype != np.float32:
            self.net.cast(dtype)
        params = self.net.collect_params()
        names = sorted(params.keys())
        params[names[0]].lr_mult = 0.5  # per-parameter multipliers
        params[names[1]].wd_mult = 3.0
        if frozen:
            params[names[2]].grad_req = "null"
        self.ctxs = list(ctxs)
        self.dtype = dtype
        self.trainer = gluon.Trainer(params, opt, None if kw is None else dict(kw), **(trainer_kw or {}))
        rs = np.random.RandomState(seed)
        self.data = [nd.array(rs.randn(4, 6), dtype=dtype) for _ in range(3)]

    def step(self, i, batch_size=4, ignore_stale_grad=False, skip_backward=()):
        x = self.data[i % len(self.data)]
        for k, ctx in enumerate(self.ctxs):
            if k in skip_backward:
                continue
            with autograd.record():
                loss = (self.net(x.as_in_context(ctx)) ** 2).sum()
            loss.backward()
        self.trainer.step(batch_size, ignore_stale_grad=ignore_stale_grad)

    def weights(self):
        return [d for p in self.net.collect_params().values() for d in p.list_data()]


def train(use_jit, opt, kw, steps=50, every=None, **setup_kw):
    """`steps` steps; `every(setup, i)` runs before step i (outside jit(): changes the setup)."""
    s = Setup(opt, kw, **setup_kw)
    for i in range(steps):
        if every:
            every(s, i)
        with jit_or_eager(use_jit):
            s.step(i)
    nd.waitall()
    return s


def batched():
    return minpy_jit.stats()["trainer_updates"]["batched"]


def compare(eager, jitted):
    assert_bits([w for w in eager.weights()], [w for w in jitted.weights()], "weight")
    assert_bits(flat_states(eager.trainer), flat_states(jitted.trainer), "state")
    assert counters(eager.trainer) == counters(jitted.trainer)


def set_lr_at_25(s, i):
    if i == 25:
        s.trainer.set_learning_rate(s.trainer.learning_rate * 0.3)


CASES = [
    ("sgd", dict(learning_rate=0.1)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=1e-3, clip_gradient=0.05)),
    ("nag", dict(learning_rate=0.05, momentum=0.9, wd=1e-3)),
    ("nag", dict(learning_rate=0.05, wd=1e-3)),
    ("adam", dict(learning_rate=0.01, wd=1e-3, clip_gradient=0.1, beta1=0.8)),
    ("rmsprop", dict(learning_rate=0.01, clip_gradient=0.2, clip_weights=0.5)),
    ("rmsprop", dict(learning_rate=0.01, centered=True, wd=1e-3)),
    ("adagrad", dict(learning_rate=0.1, wd=1e-3, clip_gradient=0.5)),
]


@pytest.mark.parametrize("opt,kw", CASES, ids=["%s-%s" % (o, "-".join(sorted(k))) for o, k in CASES])
def test_50_steps_with_a_changed_learning_rate_bit_exact(opt, kw):
    eager = train(False, opt, kw, every=set_lr_at_25)
    before = batched()
    jitted = train(True, opt, kw, every=set_lr_at_25)
    assert batched() - before == 50  # every step done in one C call
    compare(eager, jitted)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_lr_scheduler_bit_exact(opt):
    def kw():
        return dict(learning_rate=0.05, momentum=0.9, lr_scheduler=mx.lr_scheduler.FactorScheduler(step=3, factor=0.9)) \
            if opt == "sgd" else dict(learning_rate=0.01, lr_scheduler=mx.lr_scheduler.FactorScheduler(step=3, factor=0.9))
    eager = train(False, opt, kw(), steps=20)
    before = batched()
    jitted = train(True, opt, kw(), steps=20)
    assert batched() - before == 20
    compare(eager, jitted)
    assert eager.trainer._optimizer.lr_scheduler.base_lr == jitted.trainer._optimizer.lr_scheduler.base_lr


@pytest.mark.parametrize("aggregate", ["0", "1", "3"])
def test_sgd_aggregation_sizes_and_frozen_parameter(aggregate, monkeypatch):
    """MXNET_OPTIMIZER_AGGREGATION_SIZE changes how MXNet's SGD chunks its counts and rates (a
    scheduler sees num_update after each chunk); a grad_req='null' parameter is skipped."""
    monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", aggregate)

    def kw():
        return dict(learning_rate=0.1, momentum=0.9, lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1, factor=0.97))
    eager = train(False, "sgd", kw(), steps=12, frozen=True)
    before = batched()
    jitted = train(True, "sgd", kw(), steps=12, frozen=True)
    assert batched() - before == 12
    compare(eager, jitted)


def hand_set_run(use_jit, opt, kw, steps, dtype=np.float32, seed=1):
    """The benchmark's form: Parameters whose gradients are set by hand, several steps in one
    scope."""
    rs = np.random.RandomState(seed)
    params = gluon.ParameterDict("h_")
    for i in range(7):
        p = params.get("p%d" % i, shape=(5, 3), dtype=dtype)
        p.initialize(mx.init.Constant(0))
        p.set_data(nd.array(rs.randn(5, 3), dtype=dtype))
    params.get("p1").lr_mult = 2.0
    trainer = gluon.Trainer(params, opt, kw)
    with jit_or_eager(use_jit):
        for _ in range(steps):
            for p in params.values():
                p.grad()[:] = nd.array(rs.randn(5, 3), dtype=dtype)
                p.data()._fresh_grad = True
            trainer.step(3)
    nd.waitall()
    return trainer, [p.data() for p in params.values()]


@pytest.mark.parametrize("opt,momentum", [("sgd", 0.9), ("sgd", 0.0), ("nag", 0.9), ("nag", 0.0)])
def test_multi_precision_float16(opt, momentum):
    kw = dict(learning_rate=0.1, momentum=momentum, wd=1e-3, multi_precision=True)
    t_e, w_e = hand_set_run(False, opt, kw, 20, dtype=np.float16)
    before = batched()
    t_j, w_j = hand_set_run(True, opt, kw, 20, dtype=np.float16)
    assert batched() - before == 20
    assert all(w.dtype == np.float16 for w in w_j)
    assert_bits(w_e, w_j, "weight")
    assert_bits(flat_states(t_e), flat_states(t_j), "state and master copy")


def test_several_contexts():
    """One Updater per context, each with its own update counts; kvstore None: each context
    updates with its own gradients."""
    ctxs = (mx.cpu(0), mx.cpu(1))
    kw = dict(learning_rate=0.01)
    eager = train(False, "adam", kw, steps=20, ctxs=ctxs, trainer_kw=dict(kvstore=None))
    before = batched()
    jitted = train(True, "adam", kw, steps=20, ctxs=ctxs, trainer_kw=dict(kvstore=None))
    assert batched() - before == 40  # one per context per step
    compare(eager, jitted)
    assert set(jitted.trainer._optimizer._all_index_update_counts) == {0, 1}


def test_several_contexts_through_the_kvstore_without_update_on_kvstore():
    ctxs = (mx.cpu(0), mx.cpu(1))
    kw = dict(learning_rate=0.1, momentum=0.9)
    tkw = dict(kvstore="device", update_on_kvstore=False)
    eager = train(False, "sgd", kw, steps=10, ctxs=ctxs, trainer_kw=tkw)
    before = batched()
    jitted = train(True, "sgd", kw, steps=10, ctxs=ctxs, trainer_kw=tkw)
    assert batched() - before == 20
    compare(eager, jitted)


def run_stale(use_jit, ignore):
    """Step 3 sees a parameter on context 1 without a backward since the last step."""
    s = Setup("adam", dict(learning_rate=0.01), ctxs=(mx.cpu(0), mx.cpu(1)), trainer_kw=dict(kvstore=None))
    raised = []
    for i in range(6):
        with jit_or_eager(use_jit):
            try:
                s.step(i, ignore_stale_grad=ignore, skip_backward=(1,) if i == 3 else ())
            except UserWarning as e:
                raised.append((i, str(e).split("` on context ")[1].split(" has not")[0]))
    nd.waitall()
    return s, raised


@pytest.mark.parametrize("ignore", [False, True], ids=["raises", "ignore_stale_grad"])
def test_stale_gradient(ignore):
    eager, raised_e = run_stale(False, ignore)
    before = minpy_jit.stats()["trainer_updates"]
    jitted, raised_j = run_stale(True, ignore)
    after = minpy_jit.stats()["trainer_updates"]
    assert raised_e == raised_j and bool(raised_e) == (not ignore)
    compare(eager, jitted)
    if ignore:  # skipped on context 1 only, still in C
        assert after["batched"] - before["batched"] == 12 - 1
    else:  # MXNet raises: its own _update ran
        assert after["python"].get("a stale gradient (MXNet raises)", 0) - \
            before["python"].get("a stale gradient (MXNet raises)", 0) == 1


class MySGD(mx_opt.SGD):
    """A subclass: its update is Python we do not read (here: the same arithmetic)."""


def test_optimizer_subclass_runs_mxnets_python():
    kw = dict(learning_rate=0.1, momentum=0.9)
    eager = train(False, MySGD(**kw), None, steps=10)
    before = minpy_jit.stats()["trainer_updates"]
    jitted = train(True, MySGD(**kw), None, steps=10)
    after = minpy_jit.stats()["trainer_updates"]
    assert after["batched"] == before["batched"]
    why = [k for k in after["python"] if "MySGD" in k]
    assert why and after["python"][why[0]] - before["python"].get(why[0], 0) == 10
    compare(eager, jitted)


def sparse_run(use_jit):
    mx.random.seed(5)
    emb = nn.Embedding(10, 4, sparse_grad=True)
    dense = nn.Dense(2, in_units=4)
    emb.initialize()
    dense.initialize()
    params = emb.collect_params()
    params.update(dense.collect_params())
    trainer = gluon.Trainer(params, "sgd", dict(learning_rate=0.1, momentum=0.9))
    x = nd.array([[1, 2], [3, 1]])
    for _ in range(5):
        with jit_or_eager(use_jit):
            with autograd.record():
                loss = dense(emb(x).sum(axis=1)).sum()
            loss.backward()
            trainer.step(2)
    return trainer, [p.data() for p in params.values()]


def test_sparse_gradient_runs_mxnets_python():
    t_e, w_e = sparse_run(False)
    before = minpy_jit.stats()["trainer_updates"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_j, w_j = sparse_run(True)
    after = minpy_jit.stats()["trainer_updates"]
    assert after["batched"] == before["batched"]
    assert sum(after["python"].values()) - sum(before["python"].values()) == 5
    assert_bits(w_e, w_j, "weight")


def test_save_and_load_states_round_trip(tmp_path):
    """States saved under jit() load back (unsynced: the next step syncs them, as MXNet's
    Updater does) and training goes on bit for bit."""
    def run(use_jit, fname):
        s = Setup("adam", dict(learning_rate=0.01, wd=1e-3))
        for i in range(5):
            with jit_or_eager(use_jit):
                s.step(i)
        s.trainer.save_states(fname)
        for i in range(5, 8):
            with jit_or_eager(use_jit):
                s.step(i)
        s.trainer.load_states(fname)
        assert not any(s.trainer._updaters[0].states_synced.values())
        for i in range(8, 15):
            with jit_or_eager(use_jit):
                s.step(i)
        nd.waitall()
        return s
    eager = run(False, str(tmp_path / "eager.states"))
    before = batched()
    jitted = run(True, str(tmp_path / "jit.states"))
    assert batched() - before == 15
    compare(eager, jitted)
    assert open(str(tmp_path / "eager.states"), "rb").read() == open(str(tmp_path / "jit.states"), "rb").read()


@pytest.mark.parametrize("opt", ["sgd", "adam", "rmsprop"])
def test_several_steps_in_one_scope(opt):
    kw = dict(learning_rate=0.01, momentum=0.9) if opt == "sgd" else dict(learning_rate=0.01)
    t_e, w_e = hand_set_run(False, opt, kw, 4)
    before = batched()
    t_j, w_j = hand_set_run(True, opt, kw, 4)
    assert batched() - before == 4
    assert_bits(w_e, w_j, "weight")
    assert_bits(flat_states(t_e), flat_states(t_j), "state")
