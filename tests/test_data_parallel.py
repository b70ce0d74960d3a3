"""Data-parallel training in one process: parameters on two contexts, a Trainer reducing
gradients through a kvstore, eager vs the same code inside jit().

Each test runs the same training function twice -- eagerly, then inside `jit()` -- from
the same initial weights and data, and compares the weights on every context after
every step (and losses and optimizer state). Both contexts are CPUs here (cpu(0) and
cpu(1) share this machine's cores); the code paths are the ones GPU contexts take.
"""
import os

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import minpy_jit
from test_training import J, _clean_state, differential  # noqa: F401  (_clean_state: autouse fixture)

CTX = [mx.cpu(0), mx.cpu(1)]
BATCH = 8

OPTIMIZERS = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
    ("adam", {"learning_rate": 0.01}),
]
OPT_IDS = ["sgd", "momentum", "adam"]

# (kvstore, update_on_kvstore): None lets the Trainer choose (True for 'local' and 'device').
KVSTORES = [(None, None), ("local", None), ("local", False),
            ("device", None), ("device", False)]
KV_IDS = ["no-kvstore", "local", "local-update-here", "device", "device-update-here"]


def _data(steps, seed=3):
    rs = np.random.RandomState(seed)
    xs = [nd.array(rs.randn(BATCH, 20).astype(np.float32)) for _ in range(steps)]
    ys = [nd.array(rs.randint(0, 4, size=BATCH).astype(np.float32)) for _ in range(steps)]
    return xs, ys


def _net(ctx, seed=5):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu", in_units=20), nn.Dense(4, in_units=16))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    return net


def _weights(net, ctx=CTX):
    """Every parameter on every context, by position (names differ between the two runs)."""
    return [p.data(c).asnumpy() for p in net.collect_params().values() for c in ctx]


def _step(net, trainer, lossfn, x, y, ctx=CTX, split=False):
    """One data-parallel step: split the batch over the contexts, forward and backward on
    each, then reduce and update through the Trainer. Returns the per-context losses."""
    xs = gluon.utils.split_and_load(x, ctx)
    ys = gluon.utils.split_and_load(y, ctx)
    with autograd.record():
        losses = [lossfn(net(a), b) for a, b in zip(xs, ys)]
    for loss in losses:
        loss.backward()
    if split:
        trainer.allreduce_grads()
        trainer.update(BATCH)
    else:
        trainer.step(BATCH)
    return losses


def _train(use_jit, opt, kw, kvstore, update_on_kvstore, steps=3, split=False, between=None):
    net = _net(CTX)
    xs, ys = _data(steps)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), opt, dict(kw), kvstore=kvstore,
                            update_on_kvstore=update_on_kvstore)
    snaps, losses = [], []
    with J(use_jit):
        for i in range(steps):
            if between is not None:
                between(i, net, trainer)
            step_losses = _step(net, trainer, lossfn, xs[i], ys[i], split=split)
            losses.append([l.asnumpy() for l in step_losses])
            snaps.append(_weights(net))
    return dict(snaps=snaps, losses=losses)


def _check(run):
    # Bit for bit: the per-context graphs and the lowered updates round as eager MXNet does here
    # (every test of this file passes exactly).
    st = differential(run)
    assert st["eager_replays"] == 0, st  # every graph ran as a graph: one context each
    return st


@pytest.mark.parametrize("kvstore,update_on_kvstore", KVSTORES, ids=KV_IDS)
@pytest.mark.parametrize("opt,kw", OPTIMIZERS, ids=OPT_IDS)
def test_two_contexts_trainer_step(opt, kw, kvstore, update_on_kvstore):
    _check(lambda use_jit: _train(use_jit, opt, kw, kvstore, update_on_kvstore))


@pytest.mark.parametrize("kvstore", ["local", "device"])
@pytest.mark.parametrize("opt,kw", OPTIMIZERS, ids=OPT_IDS)
def test_two_contexts_allreduce_grads_then_update(opt, kw, kvstore):
    _check(lambda use_jit: _train(use_jit, opt, kw, kvstore, False, split=True))


@pytest.mark.parametrize("kvstore,update_on_kvstore", [("device", None),
                                                        ("local", False)], ids=["device", "local-update-here"])
def test_two_contexts_set_learning_rate(kvstore, update_on_kvstore):
    def lower_lr(i, net, trainer):
        if i == 2:
            trainer.set_learning_rate(0.03)
    _check(lambda use_jit: _train(use_jit, "sgd", {"learning_rate": 0.1, "momentum": 0.9}, kvstore,
                                  update_on_kvstore, steps=4, between=lower_lr))


@pytest.mark.parametrize("kvstore,update_on_kvstore", [("device", None),
                                                        ("local", False), (None, None)],
                         ids=["device", "local-update-here", "no-kvstore"])
def test_two_contexts_save_states_load_states(tmp_path, kvstore, update_on_kvstore):
    """save_states after step 2, one more step, load_states: step 4 starts again from the
    saved momentum (so eager and jit must agree on what was saved and restored)."""
    def save_and_load(i, net, trainer):
        path = str(tmp_path / "states")
        if i == 2:
            trainer.save_states(path)
        if i == 3:
            trainer.load_states(path)
    _check(lambda use_jit: _train(use_jit, "sgd", {"learning_rate": 0.1, "momentum": 0.9}, kvstore,
                                  update_on_kvstore, steps=5, between=save_and_load))


@pytest.mark.parametrize("kvstore,update_on_kvstore", [("local", False),
                                                        ("device", None)],
                         ids=["local-update-here", "device"])
def test_two_contexts_kvstore_reset_by_moving_parameters(kvstore, update_on_kvstore):
    """Moving the parameters (reset_ctx) resets the Trainer's kvstore; the next step makes a
    new one and initialises it from the moved weights. (The learning rate changes first, so the
    update takes lr as an input; after the move, the Trainer's momenta stay on the old
    contexts: MXNet's update reads them from there, and so must ours.)"""
    moved = [mx.cpu(2), mx.cpu(3)]

    def run(use_jit):
        net = _net(CTX)
        xs, ys = _data(4)
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                                kvstore=kvstore, update_on_kvstore=update_on_kvstore)
        snaps = []
        with J(use_jit):
            for i in range(4):
                ctx = CTX if i < 2 else moved
                if i == 1:
                    trainer.set_learning_rate(0.05)
                if i == 2:
                    net.collect_params().reset_ctx(moved)
                _step(net, trainer, lossfn, xs[i], ys[i], ctx=ctx)
                snaps.append(_weights(net, ctx))
        return snaps
    _check(run)


def test_two_contexts_no_recompiles_after_step_two():
    """The steady state is all cache hits: per-context forward graphs, and the update."""
    net = _net(CTX)
    xs, ys = _data(1)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                            kvstore="device", update_on_kvstore=False)
    with minpy_jit.jit():
        for i in range(6):
            if i == 2:
                minpy_jit.reset_stats()
            _step(net, trainer, lossfn, xs[0], ys[0])
    st = minpy_jit.stats()
    assert st["cache_misses"] == 0 and st["cache_hits"] > 0, st
    assert st["eager_replays"] == 0, st


def test_each_graph_runs_on_one_context():
    """A trace never spans contexts: an op on another context continues that context's own
    trace (counted in context_switches), so every compiled graph's arrays share one device,
    and both traces run at the scope's exit."""
    a = [nd.ones((4, 4), ctx=c) for c in CTX]
    minpy_jit.reset_stats()
    with minpy_jit.jit():
        out = [(x * 2 + 1).relu() for x in a]  # context 0's ops, then context 1's
    st = minpy_jit.stats()
    assert st["flushes"] == {"scope exit": 1} and st["context_switches"] == 1, st
    assert st["executions"] == 2 and st["eager_replays"] == 0, st
    for o, c in zip(out, CTX):
        assert o.context == c
        np.testing.assert_array_equal(o.asnumpy(), np.full((4, 4), 3, np.float32))


def test_interleaved_contexts_stay_exact():
    """Ops alternating between contexts switch between the contexts' traces, never a wrong value."""
    def run(use_jit):
        a = [nd.array(np.arange(16, dtype=np.float32).reshape(4, 4), ctx=c) for c in CTX]
        with J(use_jit):
            for _ in range(3):
                for i in range(2):
                    a[i] = a[i] * 0.5 + a[i].sum()
        return a
    st = _check(run)
    assert st["context_switches"] == 5 and st["executions"] == 2, st


def test_each_contexts_forward_runs_with_its_backward():
    """The forward of every context is still pending when its loss's backward() comes (the
    other contexts' traces stay open beside it), so each runs with its backward as one graph:
    no backward by MXNet's autograd, exactly eager's gradients."""
    def run(use_jit):
        net = _net(CTX)
        xs, ys = _data(2)
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        grads = []
        with J(use_jit):
            for i in range(2):
                xc = gluon.utils.split_and_load(xs[i], CTX)
                yc = gluon.utils.split_and_load(ys[i], CTX)
                with autograd.record():
                    losses = [lossfn(net(a), b) for a, b in zip(xc, yc)]
                for loss in losses:
                    loss.backward()
                grads.append([g.asnumpy() for p in net.collect_params().values() for g in p.list_grad()])
        return grads
    st = _check(run)
    assert st["backward_in_graph"] == 4 and st["backward_by_mxnet"] == 0, st


def _two_context_programs():
    """Programs whose ops move between two contexts' open traces and touch the other's arrays."""
    def reads_other(a, b):  # context 1 reads context 0's pending result through a copy
        x = a * 3 + 1
        y = b - 2
        return [x, y, x.as_in_context(CTX[1]) + y]

    def writes_other(a, b):  # out= on the other context's pending array
        x = a * 3 + 1
        y = b - 2
        nd.elemwise_add(y, y, out=x)
        return [x, y, x + 1]

    def random_both(a, b):  # each context's generator draws in its own order
        mx.random.seed(11)
        u0 = nd.random.uniform(shape=(3, 4), ctx=CTX[0])
        u1 = nd.random.uniform(shape=(3, 4), ctx=CTX[1])
        v0 = nd.random.normal(shape=(3, 4), ctx=CTX[0])
        return [u0 + a, u1 * b, v0]

    def raises_midway(a, b):  # both traces' ops before the error run, as eagerly
        x = a * 3 + 1
        y = b - 2
        try:
            nd.dot(x, nd.ones((5, 5), ctx=CTX[0]))
        except mx.MXNetError:
            pass
        return [x, y, y * x.as_in_context(CTX[1])]

    return [reads_other, writes_other, random_both, raises_midway]


@pytest.mark.parametrize("program", _two_context_programs(), ids=lambda f: f.__name__)
def test_open_traces_of_two_contexts_equal_eager(program):
    def run(use_jit):
        rs = np.random.RandomState(4)
        a = nd.array(rs.randn(3, 4).astype(np.float32), ctx=CTX[0])
        b = nd.array(rs.randn(3, 4).astype(np.float32), ctx=CTX[1])
        with J(use_jit):
            out = program(a, b)
        return out + [a, b]
    differential(run)


def test_row_sparse_gradients_on_two_contexts():
    """An Embedding with sparse gradients, reduced through the kvstore: eager fallbacks
    where the arrays are sparse, the same weights as eager."""
    def run(use_jit):
        mx.random.seed(7)
        net = nn.HybridSequential()
        net.add(nn.Embedding(30, 8, sparse_grad=True), nn.Dense(3, in_units=8, flatten=True))
        net.initialize(mx.init.Xavier(), ctx=CTX)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore="device")
        rs = np.random.RandomState(2)
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        snaps = []
        with J(use_jit):
            for _ in range(3):
                x = nd.array(rs.randint(0, 30, size=(BATCH, 1)).astype(np.float32))
                y = nd.array(rs.randint(0, 3, size=BATCH).astype(np.float32))
                _step(net, trainer, lossfn, x, y)
                snaps.append(_weights(net))
        return snaps
    differential(run)


def test_kvstore_calls_inside_jit_run_recorded_work_first_and_are_counted():
    kv = mx.kv.create("local")
    kv.init(0, nd.zeros((3,)))
    out = nd.zeros((3,))
    minpy_jit.reset_stats()
    with minpy_jit.jit():
        a = nd.ones((3,)) * 2          # pending when the push comes
        kv.push(0, [a, a + 1])         # the store keeps their sum
        kv.pull(0, out=out)
        b = out * 10                   # recorded after the pull: reads the pulled value
    np.testing.assert_array_equal(b.asnumpy(), np.full(3, 50, np.float32))
    st = minpy_jit.stats()
    assert st["kvstore"] == {"calls": {"push": 1, "pull": 1}, "arrays_pushed": 2, "arrays_pulled": 1,
                             "flushes": 1}, st["kvstore"]
    assert st["flushes"]["kvstore push"] == 1


def test_trainer_kvstore_traffic_in_stats():
    """Per step each parameter's gradients (one array per context) go to the kvstore and the
    reduced gradients come back: one pushpull call per parameter."""
    net = _net(CTX)
    xs, ys = _data(1)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore="device",
                            update_on_kvstore=False)
    _step(net, trainer, lossfn, xs[0], ys[0])  # initialises the kvstore (broadcasts the weights)
    minpy_jit.reset_stats()
    with minpy_jit.jit():
        for _ in range(3):
            _step(net, trainer, lossfn, xs[0], ys[0])
    kv = minpy_jit.stats()["kvstore"]
    nparams = len(list(net.collect_params().values()))
    assert kv["calls"] == {"pushpull": 3 * nparams}, kv
    assert kv["arrays_pushed"] == kv["arrays_pulled"] == 3 * nparams * len(CTX), kv


def test_kvstore_calls_outside_a_scope_are_not_counted():
    """Once the hooks are in, eager code's kvstore calls go through the guarded C API too: only
    the calls made with a scope open on the calling thread count (as stats() documents)."""
    with minpy_jit.jit():
        pass  # the hooks are in from here on
    kv = mx.kv.create("local")
    minpy_jit.reset_stats()
    kv.init(3, nd.ones((2, 2)))
    kv.push(3, nd.ones((2, 2)))
    kv.pull(3, out=nd.zeros((2, 2)))
    assert minpy_jit.stats()["kvstore"]["calls"] == {}
    with minpy_jit.jit():
        kv.push(3, [nd.ones((2, 2)), nd.ones((2, 2))])
    assert minpy_jit.stats()["kvstore"]["calls"] == {"push": 1}


def test_pushed_gradients_are_the_parameters_own_gradient_arrays(monkeypatch):
    """Behind a compiled forward, MXNet's backward writes the parameters' gradient buffers in
    place, and those very arrays go to the kvstore: no copy in between (the handles the kvstore
    receives under jit() are the ones allocated by initialize())."""
    net = _net(CTX)
    xs, ys = _data(1)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore="device",
                            update_on_kvstore=False)
    own = {g.handle.value for p in net.collect_params().values() for g in p.list_grad()}
    pushed = []
    real_pushpull = mx.kv.KVStore.pushpull

    def spy(self, key, value, out=None, priority=0):
        pushed.extend(v.handle.value for v in value)
        return real_pushpull(self, key, value, out=out, priority=priority)
    monkeypatch.setattr(mx.kv.KVStore, "pushpull", spy)
    with minpy_jit.jit():
        for _ in range(2):
            _step(net, trainer, lossfn, xs[0], ys[0])
    assert len(pushed) == 2 * len(own) and set(pushed) == own
    assert minpy_jit.stats()["executions"] > 0


@pytest.mark.parametrize("seed", range(12))
def test_random_two_context_programs(seed):
    """tests/stress/context_fuzz.py's programs (ops moving between the two contexts' open traces,
    copies, writes across, random draws, per-context backward() in either order): eager's bits."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "stress"))
    import context_fuzz
    assert context_fuzz.difference(seed) is None


WAITS = ("MXNDArrayWaitToRead", "MXNDArrayWaitToWrite", "MXNDArrayWaitAll", "MXNDArraySyncCopyToCPU")


@pytest.mark.parametrize("kvstore,update_on_kvstore", [("device", None), ("device", False), ("local", None),
                                                       (None, None)],
                         ids=["device", "device-update-here", "local", "no-kvstore"])
def test_a_step_inside_jit_never_waits_for_the_engine(monkeypatch, kvstore, update_on_kvstore):
    """The kvstore's pushes and pulls are asynchronous engine operations, and a flush hands its
    graph to the engine without waiting: once compiled, a data-parallel step inside jit() makes
    no call that waits for MXNet's engine, so the step's kvstore traffic can overlap whatever
    comes next, as the engine's dependencies allow (README 'Overlap')."""
    from minpy_jit import intercept
    net = _net(CTX)
    xs, ys = _data(7)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9}, kvstore=kvstore,
                            update_on_kvstore=update_on_kvstore)

    def steps(first, last):
        with minpy_jit.jit():  # one scope site: one cache
            for i in range(first, last):
                _step(net, trainer, lossfn, xs[i], ys[i])

    steps(0, 2)  # compiles, the kvstore's initialisation, the momenta
    steps(2, 4)  # (a scope's first step after a scope of several compiles one variant more)
    nd.waitall()
    waits = []
    for name in WAITS:
        real = getattr(intercept._PROXY, name)
        monkeypatch.setattr(intercept._PROXY, name, lambda *a, _n=name, _f=real: waits.append(_n) or _f(*a))
    minpy_jit.reset_stats()
    steps(4, 7)
    st = minpy_jit.stats()
    monkeypatch.undo()
    nd.waitall()
    assert waits == [], waits
    assert st["executions"] >= 3 and st["cache_misses"] == 0, st
