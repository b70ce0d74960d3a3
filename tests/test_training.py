"""Differential tests: training under minpy_jit.jit() vs the identical eager MXNet code.

Every test runs the same function twice -- once eagerly, once inside a `jit()`
scope -- from the same seeds and the same initial weights, then compares
losses, gradients, weights, optimizer state and BatchNorm running statistics.
Every result is compared bit for bit: our fused kernels, lifted optimizer updates and
gradient sums reproduce MXNet's rounding.

Each test opens its jit() scope on its own source line: the runtime counts
compiled graphs per scope site (recompile_limit), so sharing one `with` line
between tests would let one test's compiles push another's site into eager mode.
"""
import contextlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn, rnn

import minpy_jit
from conftest import assert_same
from minpy_jit import intercept



# ------------------------------------------------------------------ helpers

def J(use_jit):
    """The scope for one of the two runs: jit() or nothing."""
    return minpy_jit.jit() if use_jit else contextlib.nullcontext()


def _np(x):
    if isinstance(x, nd.NDArray):
        return x.asnumpy()
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_np(v) for v in x]
    return x


def differential(run):
    """run(use_jit) -> nested arrays. Runs eager then jit, compares bit for bit, and returns the
    stats of the jit run."""
    want = _np(run(False))
    assert not intercept.hooks_active()
    minpy_jit.reset_stats()
    got = _np(run(True))
    assert not intercept.hooks_active()
    st = minpy_jit.stats()
    # the jit run must really have recorded and executed graphs, or the test proves nothing
    assert st["ops_recorded"] > 0 and st["executions"] > 0, st
    assert_same(want, got)
    return st


def rand(shape, seed, scale=1.0):
    return nd.array(np.random.RandomState(seed).uniform(-scale, scale, size=shape).astype(np.float32))


def param_values(net):
    """Parameters by position (names carry a global counter that differs between the two runs)."""
    return [p.data().asnumpy() for p in net.collect_params().values()]


def param_grads(net):
    return [p.grad().asnumpy() for p in net.collect_params().values() if p.grad_req != "null"]


DEFAULT_RECOMPILE_LIMIT = minpy_jit.config()["recompile_limit"]


@pytest.fixture(autouse=True)
def _clean_state():
    """Each test starts outside autograd with an empty graph cache and site table, and with
    the per-site recompile limit raised (as conftest.run_jit does): a training loop compiles
    several graphs per site, and a site that hits the limit runs eagerly -- which would turn
    the rest of a differential test into eager-vs-eager. Tests that are about the limit reset it."""
    assert not autograd.is_recording() and not autograd.is_training()
    minpy_jit.clear_cache()
    old = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=10 ** 9)
    try:
        yield
    finally:
        minpy_jit.config(recompile_limit=old)
        leaked = (minpy_jit._core.pending(), intercept.hooks_active())
        if any(leaked):  # clean up, so that one test's leftovers do not fail every later test
            minpy_jit.flush()
    assert not any(leaked), "after the test: %d ops still pending, hooks still active: %s" % leaked
    assert not autograd.is_recording() and not autograd.is_training()


# ============================================================ autograd on plain arrays

@pytest.mark.parametrize("attach_inside", [False, True])
def test_attach_grad_write(attach_inside):
    def run(use_jit):
        x = rand((3, 4), 0)
        w = rand((4, 5), 1)
        with J(use_jit):
            if attach_inside:
                x = x * 1.0  # x is pending when attach_grad runs
            x.attach_grad()
            w.attach_grad()
            with autograd.record():
                y = nd.dot(nd.tanh(x), w)
                loss = (y * y).sum() + nd.sigmoid(w).mean()
            loss.backward()
            out = dict(loss=loss, gx=x.grad, gw=w.grad)
        return out
    differential(run)


def test_grad_req_add_accumulates_two_backwards():
    def run(use_jit):
        x = rand((2, 6), 2)
        w = rand((6, 3), 3)
        x.attach_grad(grad_req="add")
        w.attach_grad(grad_req="add")
        losses = []
        with J(use_jit):
            for k in range(2):
                with autograd.record():
                    loss = (nd.relu(nd.dot(x, w)) * (k + 1)).sum()
                loss.backward()
                losses.append(loss.asnumpy())
        return dict(losses=losses, gx=x.grad, gw=w.grad)
    differential(run)


def test_grad_req_add_reads_between_backwards():
    """Reading the accumulating gradient after the first backward gives the partial sum."""
    def run(use_jit):
        x = rand((4,), 4)
        x.attach_grad(grad_req="add")
        seen = []
        with J(use_jit):
            for k in range(2):
                with autograd.record():
                    y = (nd.exp(x) * (k + 2)).sum()
                y.backward()
                seen.append(x.grad.asnumpy().copy())
        return seen
    differential(run)


def test_multiple_heads_with_head_gradients():
    def run(use_jit):
        x = rand((3, 4), 5)
        g1 = rand((3, 4), 6)
        g2 = rand((3,), 7)
        with J(use_jit):
            x.attach_grad()
            with autograd.record():
                y1 = nd.sin(x) * 2
                y2 = nd.sum(x * x, axis=1)
            autograd.backward([y1, y2], [g1, g2])
            return dict(y1=y1, y2=y2, gx=x.grad)
    # y1 and y2 are independent computations, each its own graph; x's three gradient
    # contributions are still summed as eager sums them (flush.cc sums_cross_parts).
    st = differential(run)
    assert st["independent_parts"] == 2, st


def test_single_head_gradient_via_backward_arg():
    def run(use_jit):
        x = rand((5,), 8)
        hg = rand((5,), 9)
        x.attach_grad()
        with J(use_jit):
            with autograd.record():
                y = nd.log(nd.abs(x) + 1) * x
            y.backward(hg)
        return dict(y=y, gx=x.grad)
    differential(run)


def test_autograd_grad_first_order():
    def run(use_jit):
        x = rand((4, 3), 10)
        x.attach_grad()
        with J(use_jit):
            with autograd.record():
                y = (nd.tanh(x) * x).sum()
            (gx,) = autograd.grad([y], [x])
            return dict(y=y, gx=gx)
    differential(run)


def test_autograd_grad_create_graph_second_order():
    """Backward through dy/dx taken with create_graph=True: a second-order gradient.
    (Only ops whose backward is itself differentiable in MXNet 1.9.1: sin, tanh, elemwise_add.)"""
    def run(use_jit):
        x = rand((6,), 11)
        x.attach_grad()
        with J(use_jit):
            with autograd.record():
                y = nd.elemwise_add(nd.sin(x), nd.tanh(x))
                (gx,) = autograd.grad([y], [x], head_grads=[nd.ones_like(x)], create_graph=True,
                                      retain_graph=True)
                z = nd.exp(gx) * 3 + gx
            z.backward()
            return dict(y=y, gx=gx, z=z, ggx=x.grad)
    differential(run)


def test_retain_graph_then_second_backward():
    def run(use_jit):
        x = rand((3, 3), 12)
        x.attach_grad()
        with J(use_jit):
            with autograd.record():
                y = nd.exp(nd.dot(x, x)).sum()
            y.backward(retain_graph=True)
            g1 = x.grad.asnumpy().copy()
            y.backward()
            return dict(g1=g1, g2=x.grad)
    differential(run)


def test_mark_variables():
    def run(use_jit):
        x = rand((4,), 13)
        gbuf = nd.zeros((4,))
        y_arr = rand((4,), 14)
        gbuf2 = nd.zeros((4,))
        with J(use_jit):
            autograd.mark_variables([x, y_arr], [gbuf, gbuf2], grad_reqs=["write", "add"])
            for _ in range(2):
                with autograd.record():
                    z = (x * y_arr + nd.square(y_arr)).sum()
                z.backward()
            return dict(z=z, gx=gbuf, gy=gbuf2, gx_attr=x.grad)
    differential(run)


def test_pause_inside_record():
    """Ops under autograd.pause() are constants for backward: here a stop-gradient factor."""
    def run(use_jit):
        x = rand((5,), 15)
        x.attach_grad()
        with J(use_jit):
            with autograd.record():
                a = x * 3
                with autograd.pause():
                    c = nd.exp(a) + 1  # not differentiated
                    paused_rec = autograd.is_recording()
                y = (a * c).sum()
            y.backward()
            assert paused_rec is False
            return dict(y=y, c=c, gx=x.grad)
    differential(run)


def test_train_mode_and_predict_mode_switches():
    """Dropout inside predict_mode() is the identity; inside train_mode() it drops."""
    def run(use_jit):
        x = rand((8, 16), 16) + 2
        x.attach_grad()
        mx.random.seed(123)
        with J(use_jit):
            with autograd.record():  # training by default
                with autograd.predict_mode():
                    a = nd.Dropout(x, p=0.5)
                    tr1 = autograd.is_training()
                b = nd.Dropout(x, p=0.5)
                with autograd.predict_mode():
                    with autograd.train_mode():
                        c = nd.Dropout(x * 2, p=0.3)
                loss = (a * 2 + b * 3 + c).sum()
            loss.backward()
            assert tr1 is False
            return dict(a=a, b=b, c=c, loss=loss, gx=x.grad)
    differential(run)


def test_train_mode_outside_record_dropout():
    """train_mode() without record(): Dropout drops; predict_mode: identity."""
    def run(use_jit):
        x = rand((6, 10), 17) + 2
        mx.random.seed(7)
        with J(use_jit):
            with autograd.train_mode():
                a = nd.Dropout(x, p=0.4)
            b = nd.Dropout(x, p=0.4)  # default: predict
            return dict(a=a, b=b)
    differential(run)


def test_dropout_same_mask_under_seed_and_gradient():
    def run(use_jit):
        x = rand((16, 32), 18)
        x.attach_grad()
        mx.random.seed(2024)
        with J(use_jit):
            outs = []
            for _ in range(3):  # three draws: the RNG stream advances identically
                with autograd.record():
                    y = nd.Dropout(x, p=0.5)
                    loss = (y * y).sum()
                loss.backward()
                outs.append((y.asnumpy(), x.grad.asnumpy().copy()))
            return outs
    differential(run)


@pytest.mark.parametrize("fix_gamma", [False, True])
def test_batchnorm_op_running_stats(fix_gamma):
    def run(use_jit):
        x = rand((8, 3, 4, 4), 19) * 3 + 1
        gamma, beta = rand((3,), 20) + 1, rand((3,), 21)
        mm, mv = nd.zeros((3,)), nd.ones((3,))
        for a in (x, gamma, beta):
            a.attach_grad()
        res = []
        with J(use_jit):
            for step in range(3):
                with autograd.record():
                    y = nd.BatchNorm(x * (step + 1), gamma, beta, mm, mv, momentum=0.8,
                                     fix_gamma=fix_gamma, eps=1e-5)
                    loss = (y * nd.arange(3).reshape((1, 3, 1, 1))).sum()
                loss.backward()
                res.append(dict(y=y.asnumpy(), mm=mm.asnumpy(), mv=mv.asnumpy(), gx=x.grad.asnumpy(),
                                gg=gamma.grad.asnumpy(), gb=beta.grad.asnumpy()))
            # inference (not recording): uses and does not change the running statistics
            yi = nd.BatchNorm(x, gamma, beta, mm, mv, fix_gamma=fix_gamma)
            res.append(dict(yi=yi, mm=mm, mv=mv))
        return res
    differential(run)


def test_batchnorm_running_stats_read_inside_scope_without_flush_cause():
    """moving_mean read right after the training step (the update is pending) is the new value."""
    def run(use_jit):
        x = rand((6, 2, 3, 3), 22) + 0.5
        gamma, beta = nd.ones((2,)), nd.zeros((2,))
        mm, mv = nd.zeros((2,)), nd.ones((2,))
        with J(use_jit):
            with autograd.record():
                y = nd.BatchNorm(x, gamma, beta, mm, mv, momentum=0.5)
            z = mm * 1  # reads the running mean after the in-place update
            w = mv + 0
        return dict(y=y, z=z, w=w, mm=mm, mv=mv)
    differential(run)


# ============================================================ Gluon blocks

def _mlp(hidden=32, out=4, dropout=0.0, bn=False):
    net = nn.Sequential()
    net.add(nn.Dense(hidden, activation="relu"))
    if bn:
        net.add(nn.BatchNorm())
    if dropout:
        net.add(nn.Dropout(dropout))
    net.add(nn.Dense(hidden, activation="tanh"), nn.Dense(out))
    return net


def _cnn():
    net = nn.Sequential()
    net.add(nn.Conv2D(4, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(pool_size=2), nn.Conv2D(8, kernel_size=3), nn.Activation("relu"),
            nn.Flatten(), nn.Dense(16, activation="relu"), nn.Dropout(0.2), nn.Dense(4))
    return net


def test_gluon_deferred_init_inside_jit_forward_backward():
    """Dense/Conv2D/BatchNorm/Dropout net, initialised on its first call inside jit()."""
    def run(use_jit):
        mx.random.seed(42)
        net = nn.Sequential()
        net.add(nn.Conv2D(3, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.Dropout(0.3), nn.Flatten(), nn.Dense(10, activation="relu"), nn.Dense(3))
        net.initialize(mx.init.Xavier())
        x = rand((4, 1, 6, 6), 23)
        label = nd.array([0, 1, 2, 1])
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        with J(use_jit):
            with autograd.record():
                loss = lossfn(net(x), label)
            loss.backward()
            out = dict(loss=loss, w=param_values(net), g=param_grads(net))
        return out
    differential(run)


def test_gluon_inference_after_training_mode_batchnorm_dropout():
    def run(use_jit):
        mx.random.seed(3)
        net = _mlp(hidden=16, dropout=0.5, bn=True)
        net.initialize()
        x = rand((8, 20), 24)
        with J(use_jit):
            with autograd.record():
                y_train = net(x)
            y_pred = net(x)  # predict mode: BN uses running stats, dropout is identity
            return dict(y_train=y_train, y_pred=y_pred, p=param_values(net))
    differential(run)


def test_train_forward_without_backward_then_predict_repeated():
    """A training-mode forward that is never backwarded, then an inference forward, three times
    in a row (fresh nets): every repetition must give eager's values."""
    def run(use_jit):
        out = []
        mx.random.seed(8)
        for _ in range(3):
            net = nn.Sequential()
            net.add(nn.Dense(16), nn.BatchNorm(), nn.Dropout(0.5))
            net.initialize()
            x = rand((8, 20), 32)
            with J(use_jit):
                with autograd.record():
                    y_train = net(x)
                y_pred = net(x)
            out.append([y_train, y_pred, param_values(net)])
        return out
    differential(run)


def test_hybridized_block_inside_jit():
    """A hybridized block (CachedOp) called inside jit(), between recorded ops."""
    def run(use_jit):
        mx.random.seed(5)
        body = nn.HybridSequential()
        body.add(nn.Dense(12, activation="relu"), nn.BatchNorm(), nn.Dense(6))
        body.initialize()
        body.hybridize()
        head = nn.Dense(2)  # not hybridized
        head.initialize()
        x = rand((5, 7), 25)
        body(x)  # build the CachedOp eagerly first
        res = []
        with J(use_jit):
            for _ in range(2):
                with autograd.record():
                    h = nd.tanh(x * 2)  # recorded, pending when the CachedOp runs
                    y = head(body(h))
                    loss = (y * y).mean()
                loss.backward()
                res.append(dict(loss=loss.asnumpy(), g=param_grads(body) + param_grads(head)))
            res.append(param_values(body))  # includes BN running stats
        return res
    differential(run)


def test_hybridized_block_deferred_init_inside_jit():
    def run(use_jit):
        mx.random.seed(6)
        net = nn.HybridSequential()
        net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
        net.initialize()
        net.hybridize()
        x = rand((4, 5), 26)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        with J(use_jit):
            losses = []
            for _ in range(3):
                with autograd.record():
                    loss = nd.square(net(x)).sum()
                loss.backward()
                trainer.step(4)
                losses.append(loss.asnumpy())
        return dict(losses=losses, w=param_values(net))
    differential(run)


# ============================================================ Trainer / optimizers

OPTIMIZERS = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.05, "momentum": 0.9}),
    ("nag", {"learning_rate": 0.05, "momentum": 0.9}),
    ("adam", {"learning_rate": 0.01}),
    ("rmsprop", {"learning_rate": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True}),
    ("sgd", {"learning_rate": 0.1, "wd": 0.01}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001, "clip_gradient": 0.05}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.1}),
]
assert "adamw" not in mx.optimizer.Optimizer.opt_registry  # MXNet 1.9.1 has no AdamW optimizer (only the op)


def _states(trainer, net):
    """Optimizer state (trainer._updaters[0].states) in the order of net's parameters, flattened.
    (The Trainer indexes parameters by sorted name, and names carry a global counter, so the
    two runs can number the same parameter differently.)"""
    out = []
    states = trainer._updaters[0].states
    for p in net.collect_params().values():
        s = states[trainer._param2idx[p.name]]
        if s is None:
            continue
        out.extend(s if isinstance(s, (list, tuple)) else [s])
    return out


def _train_mlp(use_jit, opt, kw, steps, scheduler=None, split=False, read_between=False):
    mx.random.seed(11)
    net = _mlp(hidden=16)
    net.initialize(mx.init.Xavier())
    kw = dict(kw)
    if scheduler is not None:
        kw["lr_scheduler"] = scheduler()
    x = rand((8, 20), 27)
    label = nd.array(np.arange(8) % 4)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    net(x)  # finish deferred init outside both runs: the Trainer needs initialised params
    trainer = gluon.Trainer(net.collect_params(), opt, kw)
    losses, between = [], []
    with J(use_jit):
        for _ in range(steps):
            with autograd.record():
                loss = lossfn(net(x), label)
            loss.backward()
            if split:
                trainer.allreduce_grads()
                trainer.update(8)
            else:
                trainer.step(8)
            losses.append(loss.asnumpy())
            if read_between:
                between.append(param_values(net) + param_grads(net))
    return dict(losses=losses, w=param_values(net), g=param_grads(net), states=_states(trainer, net),
                between=between, lr=np.float64(trainer.learning_rate))


@pytest.mark.parametrize("opt,kw", OPTIMIZERS, ids=["%s-%s" % (o, "-".join(sorted(k))) for o, k in OPTIMIZERS])
def test_trainer_step_optimizers(opt, kw):
    differential(lambda use_jit: _train_mlp(use_jit, opt, kw, steps=5))


@pytest.mark.parametrize("opt,kw", [("sgd", {"momentum": 0.5}), ("sgd", {}), ("nag", {"momentum": 0.5}),
                                    ("adam", {})])
def test_trainer_lr_scheduler_factor(opt, kw):
    sched = lambda: mx.lr_scheduler.FactorScheduler(step=2, factor=0.7, base_lr=0.1)  # noqa: E731
    differential(lambda use_jit: _train_mlp(use_jit, opt, kw, steps=7, scheduler=sched))


@pytest.mark.parametrize("opt,kw", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                    ("nag", {"learning_rate": 0.1, "momentum": 0.9}),
                                    ("adam", {"learning_rate": 0.01})])
def test_trainer_allreduce_update_split(opt, kw):
    differential(lambda use_jit: _train_mlp(use_jit, opt, kw, steps=4, split=True))


@pytest.mark.parametrize("opt,kw", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                    ("nag", {"learning_rate": 0.1, "momentum": 0.9}),
                                    ("adam", {"learning_rate": 0.01})])
def test_state_read_between_steps(opt, kw):
    """param.data().asnumpy() and param.grad() between steps give the current values."""
    differential(lambda use_jit: _train_mlp(use_jit, opt, kw, steps=4, read_between=True))


@pytest.mark.parametrize("opt", ["sgd", "nag"])
def test_weight_read_lazily_between_steps_then_used(opt):
    """A weight captured (not materialised) between steps keeps its value at that point."""
    def run(use_jit):
        mx.random.seed(12)
        net = nn.Dense(3)
        net.initialize()
        x = rand((4, 5), 28)
        net(x)
        trainer = gluon.Trainer(net.collect_params(), opt, {"learning_rate": 0.5, "momentum": 0.9})
        snaps = []
        with J(use_jit):
            for _ in range(3):
                with autograd.record():
                    loss = nd.square(net(x)).sum()
                loss.backward()
                snaps.append(net.weight.data() * 1)     # a pending copy of the pre-update weight
                snaps.append(net.weight.grad() + 0)     # and of the gradient
                trainer.step(4)
                snaps.append(net.weight.data().copy())  # copy of the post-update weight
        return dict(snaps=snaps, w=param_values(net))
    differential(run)


def test_optimizer_state_after_n_steps_adam_and_momentum():
    def run(use_jit):
        out = {}
        for name, opt, kw in [("mom", "sgd", {"learning_rate": 0.05, "momentum": 0.8}),
                              ("nag", "nag", {"learning_rate": 0.05, "momentum": 0.8}),
                              ("adam", "adam", {"learning_rate": 0.02, "beta1": 0.8}),
                              ("rmsprop", "rmsprop", {"learning_rate": 0.01, "centered": True})]:
            out[name] = _train_mlp(use_jit, opt, kw, steps=6)["states"]
            # 6 params: momentum / mean+var / n,g,delta
            assert len(out[name]) == 6 * {"adam": 2, "rmsprop": 3}.get(opt, 1), name
        return out
    differential(run)


@pytest.mark.parametrize("opt,kw", [("nag", {"learning_rate": 0.05, "momentum": 0.9}),
                                    ("adam", {"learning_rate": 0.01}),
                                    ("sgd", {"learning_rate": 0.1, "momentum": 0.9})])
def test_training_loop_reads_nothing_until_the_end(opt, kw):
    """Losses, weight snapshots and gradients kept as (pending) arrays across in-place weight
    updates, read only after the scope: each must hold the value of its own step."""
    def run(use_jit):
        mx.random.seed(13)
        net = _mlp(hidden=8, dropout=0.25)
        net.initialize()
        x = rand((6, 20), 31)
        label = nd.array(np.arange(6) % 4)
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        net(x)
        trainer = gluon.Trainer(net.collect_params(), opt, kw)
        first = list(net.collect_params().values())[0]
        kept = []
        with J(use_jit):
            for _ in range(6):
                with autograd.record():
                    loss = lossfn(net(x), label)
                loss.backward()
                kept.append([loss, loss.mean(), first.data() * 1, first.grad() * 1])
                trainer.step(6)
        return dict(kept=kept, w=param_values(net), states=_states(trainer, net))
    differential(run)


def _train_step(net, trainer, lossfn, x, y, batch_size=6):
    """One recorded forward, backward and Trainer step; returns the loss."""
    with autograd.record():
        loss = lossfn(net(x), y)
    loss.backward()
    trainer.step(batch_size)
    return loss


def _small_setup(seed, opt="sgd", kw=None, dropout=0.0, bn=False):
    mx.random.seed(seed)
    net = _mlp(hidden=8, dropout=dropout, bn=bn)
    net.initialize()
    rs = np.random.RandomState(seed)
    xs = [nd.array(rs.randn(6, 20).astype(np.float32)) for _ in range(4)]
    ys = [nd.array(rs.randint(0, 4, size=6).astype(np.float32)) for _ in range(4)]
    net(xs[0])
    trainer = gluon.Trainer(net.collect_params(), opt, kw or {"learning_rate": 0.1, "momentum": 0.9})
    return net, trainer, xs, ys, gluon.loss.SoftmaxCrossEntropyLoss()


@pytest.mark.parametrize("opt", ["sgd", "nag"])
def test_gradient_accumulation_grad_req_add_and_zero_grad(opt):
    """Gluon params with grad_req='add': two micro-batches per step, step, zero_grad()."""
    def run(use_jit):
        net, trainer, xs, ys, lossfn = _small_setup(14, opt)
        for p in net.collect_params().values():
            p.grad_req = "add"
        out = []
        with J(use_jit):
            for step in range(4):
                for micro in range(2):
                    with autograd.record():
                        loss = lossfn(net(xs[(2 * step + micro) % 4]), ys[(2 * step + micro) % 4])
                    loss.backward()
                out.append(param_grads(net))  # the sum of both micro-batches
                trainer.step(12)
                net.collect_params().zero_grad()
                out.append(param_grads(net))  # zeros
        return dict(out=out, w=param_values(net))
    differential(run)


def test_frozen_layer_grad_req_null():
    def run(use_jit):
        net, trainer, xs, ys, lossfn = _small_setup(15, "nag")
        for p in net[0].collect_params().values():
            p.grad_req = "null"
        trainer = gluon.Trainer(net.collect_params(), "nag", {"learning_rate": 0.1, "momentum": 0.9})
        losses = []
        with J(use_jit):
            for step in range(4):
                losses.append(_train_step(net, trainer, lossfn, xs[step], ys[step]))
        return dict(losses=losses, w=param_values(net), g=param_grads(net))
    differential(run)


def test_set_learning_rate_between_steps():
    def run(use_jit):
        net, trainer, xs, ys, lossfn = _small_setup(16, "nag")
        losses = []
        with J(use_jit):
            for step in range(6):
                trainer.set_learning_rate(0.1 / (step + 1))
                losses.append(_train_step(net, trainer, lossfn, xs[step % 4], ys[step % 4]))
        return dict(losses=losses, w=param_values(net), states=_states(trainer, net))
    differential(run)


def test_set_data_and_in_place_weight_edit_between_steps():
    """Weights overwritten between steps (set_data from numpy, an in-place scale) are used by
    the next step and by the optimizer."""
    def run(use_jit):
        net, trainer, xs, ys, lossfn = _small_setup(17, "nag")
        first, last = list(net.collect_params().values())[0], list(net.collect_params().values())[-2]
        losses = []
        with J(use_jit):
            for step in range(4):
                losses.append(_train_step(net, trainer, lossfn, xs[step], ys[step]))
                if step == 1:
                    first.set_data(nd.array(np.full(first.shape, 0.01, dtype=np.float32)))
                if step == 2:
                    w = last.data()
                    w *= 0.5  # in place, on a weight just updated by the (pending) optimizer step
        return dict(losses=losses, w=param_values(net), states=_states(trainer, net))
    differential(run)


def test_clip_global_norm_between_backward_and_step():
    def run(use_jit):
        net, trainer, xs, ys, lossfn = _small_setup(18, "nag")
        norms, losses = [], []
        with J(use_jit):
            for step in range(4):
                with autograd.record():
                    loss = lossfn(net(xs[step]), ys[step])
                loss.backward()
                grads = [p.grad() for p in net.collect_params().values()]
                norms.append(gluon.utils.clip_global_norm(grads, 0.5))  # asscalar inside
                trainer.step(6)
                losses.append(loss)
        return dict(norms=np.array(norms), losses=losses, w=param_values(net))
    differential(run)


def test_record_in_predict_mode_and_seed_inside_scope():
    """record(train_mode=False): Dropout is the identity and BatchNorm uses running stats, yet
    gradients flow; mx.random.seed() called inside the scope restarts the dropout masks."""
    def run(use_jit):
        net, trainer, xs, ys, lossfn = _small_setup(19, "nag", dropout=0.5, bn=True)
        out = []
        with J(use_jit):
            for step in range(4):
                if step % 2 == 0:
                    mx.random.seed(77)  # same masks in steps 0 and 2
                with autograd.record(train_mode=(step != 1)):
                    loss = lossfn(net(xs[0]), ys[0])
                loss.backward()
                out.append([loss, param_grads(net)])
                trainer.step(6)
        return dict(out=out, w=param_values(net))  # includes BN running stats
    differential(run)


# ============================================================ 50-step equivalence

def test_mlp_50_steps():
    def run(use_jit):
        mx.random.seed(100)
        net = nn.Sequential()
        net.add(nn.Dense(32, activation="relu"), nn.Dense(32, activation="relu"), nn.Dense(4))
        net.initialize(mx.init.Xavier())
        rs = np.random.RandomState(0)
        xs = [nd.array(rs.randn(16, 20).astype(np.float32)) for _ in range(5)]
        ys = [nd.array(rs.randint(0, 4, size=16).astype(np.float32)) for _ in range(5)]
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = None
        losses = []
        with J(use_jit):
            for step in range(50):
                x, y = xs[step % 5], ys[step % 5]
                with autograd.record():
                    loss = lossfn(net(x), y)  # deferred init on the first step, inside jit()
                loss.backward()
                if trainer is None:
                    trainer = gluon.Trainer(net.collect_params(), "sgd",
                                            {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4})
                trainer.step(16)
                losses.append(loss.mean().asscalar())
        return dict(losses=np.array(losses), w=param_values(net))
    differential(run)


def test_cnn_50_steps():
    def run(use_jit):
        mx.random.seed(200)
        net = _cnn()
        net.initialize(mx.init.Xavier())
        rs = np.random.RandomState(1)
        xs = [nd.array(rs.randn(8, 1, 8, 8).astype(np.float32)) for _ in range(4)]
        ys = [nd.array(rs.randint(0, 4, size=8).astype(np.float32)) for _ in range(4)]
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        net(xs[0])
        trainer = gluon.Trainer(net.collect_params(), "nag", {"learning_rate": 0.02, "momentum": 0.9})
        losses = []
        for step in range(50):
            with J(use_jit):  # one scope per step
                with autograd.record():
                    loss = lossfn(net(xs[step % 4]), ys[step % 4])
                loss.backward()
                trainer.step(8)
            losses.append(loss.asnumpy())
        return dict(losses=losses, w=param_values(net))  # includes BN running mean/var
    differential(run)


class _LSTMNet(gluon.Block):
    def __init__(self, hidden, nout, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.cell = rnn.LSTMCell(hidden)
            self.out = nn.Dense(nout)

    def forward(self, x):  # x: (batch, T, features), or a list of T (batch, features) arrays
        steps = x if isinstance(x, list) else [x[:, t, :] for t in range(x.shape[1])]
        states = self.cell.begin_state(batch_size=steps[0].shape[0])
        outs = []
        for xt in steps:
            h, states = self.cell(xt, states)
            outs.append(h)
        return self.out(outs[-1] + 0.5 * outs[len(outs) // 2])


@pytest.mark.parametrize("slice_in_forward", [True, False])
def test_lstm_cell_unrolled_50_steps(slice_in_forward):
    """Exact up to float reassociation: the shared LSTM weights get 6 gradient contributions,
    summed in a different order when the unrolled steps run inside a CachedOp."""
    def run(use_jit):
        mx.random.seed(300)
        net = _LSTMNet(12, 3)
        net.initialize(mx.init.Xavier())
        rs = np.random.RandomState(2)
        x = nd.array(rs.randn(4, 6, 5).astype(np.float32))
        if not slice_in_forward:  # time steps sliced once, outside record()
            x = [x[:, t, :] for t in range(6)]
        y = nd.array(rs.randn(4, 3).astype(np.float32))
        lossfn = gluon.loss.L2Loss()
        trainer = None
        losses = []
        with J(use_jit):
            for _ in range(50):
                with autograd.record():
                    loss = lossfn(net(x), y)
                loss.backward()
                if trainer is None:
                    trainer = gluon.Trainer(net.collect_params(), "rmsprop", {"learning_rate": 0.01})
                trainer.step(4)
                losses.append(loss.asnumpy())
        return dict(losses=losses, w=param_values(net))
    st = differential(run)
    assert st["fused_kernels"] > 0  # the cells' gate math ran in fused units with gradients


# ============================================================ recompilation

def test_adam_factor_scheduler_100_steps_does_not_recompile_every_step():
    """Adam's bias-corrected lr and the scheduled lr change every step: that must not
    mean a new compiled graph every step (requirement: after step 0, at most one cache miss,
    at step 1; none later).
    Runs with the default recompile limit, so the site may switch to eager midway: results
    must still equal eager."""
    minpy_jit.config(recompile_limit=DEFAULT_RECOMPILE_LIMIT)
    misses_by_step = {}

    def run(use_jit):
        mx.random.seed(400)
        net = nn.Sequential()
        net.add(nn.Dense(8, activation="relu"), nn.Dense(2))
        net.initialize()
        x = rand((6, 4), 29)
        y = rand((6, 2), 30)
        net(x)
        trainer = gluon.Trainer(net.collect_params(), "adam", {
            "learning_rate": 0.01, "lr_scheduler": mx.lr_scheduler.FactorScheduler(step=1, factor=0.99)})
        lossfn = gluon.loss.L2Loss()
        losses, lrs = [], []
        with J(use_jit):
            for step in range(100):
                before = minpy_jit.stats()["cache_misses"]
                losses.append(_train_step(net, trainer, lossfn, x, y).asnumpy())
                lrs.append(trainer.learning_rate)
                new = minpy_jit.stats()["cache_misses"] - before
                if use_jit and new:
                    misses_by_step[step] = [(e["cause"], e["miss_reason"][:120])
                                            for e in minpy_jit.events()[-8:] if not e["hit"]][-new:]
        assert len(set(lrs)) == 100  # the learning rate really changes every step
        return dict(losses=losses, w=param_values(net), states=_states(trainer, net))
    st = differential(run)
    # Step 0 compiles each distinct segment once (state creation, forward, backward, update);
    # the changing lr may cost one recompile of the update graph (step 1); never a miss after that.
    later = {step: m for step, m in misses_by_step.items() if step >= 1}
    assert sum(len(m) for m in later.values()) <= 1 and all(step <= 1 for step in later), (
        "100 Adam steps with a per-step learning rate caused %d cache misses (sites: %s); misses by step: %s"
        % (st["cache_misses"], st["sites"], misses_by_step))
