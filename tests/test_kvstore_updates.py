"""A Trainer updating on a local kvstore (update_on_kvstore, the default for 'local' and 'device'
over several contexts): inside jit() one push of every parameter, the optimizer's Updater
called once with the lists, then one pull (minpy_jit/kvstore_updates.py), instead of a
pushpull per parameter whose updater MXNet calls back from C. Weights must equal eager's after
every step, bit for bit; where the Updater's list call could differ from its calls one key at a
time (an lr_scheduler with keys at different step counts, an optimizer of our own), MXNet's
order of calls is kept.
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import gluon, nd
from mxnet.gluon import nn

from test_data_parallel import CTX, OPT_IDS, OPTIMIZERS, _check, _data, _net, _step, _weights
from test_training import J, _clean_state  # noqa: F401  (_clean_state: autouse fixture)


def _run(use_jit, opt, kw, kvstore="device", steps=4, between=None):
    net = _net(CTX)
    xs, ys = _data(steps)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), opt, kw, kvstore=kvstore)
    snaps = []
    with J(use_jit):
        for i in range(steps):
            if between is not None:
                between(i, net, trainer)
            _step(net, trainer, lossfn, xs[i], ys[i])
            snaps.append(_weights(net))
    return snaps


def _calls(st):
    calls = dict(st["kvstore"]["calls"])
    calls.pop("broadcast", None)  # the kvstore's initialisation, in the first step
    return calls


@pytest.mark.parametrize("kvstore", ["local", "device"])
@pytest.mark.parametrize("opt,kw", OPTIMIZERS, ids=OPT_IDS)
def test_update_on_kvstore_is_one_push_and_one_pull_a_step(opt, kw, kvstore):
    st = _check(lambda use_jit: _run(use_jit, opt, dict(kw), kvstore))
    assert _calls(st) == {"push": 4, "pull": 4}, st["kvstore"]


@pytest.mark.parametrize("opt,kw", [("nag", {"learning_rate": 0.1, "momentum": 0.9}),
                                    ("rmsprop", {"learning_rate": 0.01}),
                                    ("ftrl", {"learning_rate": 0.1}),
                                    ("ftml", {"learning_rate": 0.01}),
                                    ("signum", {"learning_rate": 0.01, "momentum": 0.9}),
                                    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01,
                                             "clip_gradient": 0.05})],
                         ids=["nag", "rmsprop", "ftrl", "ftml", "signum", "sgd-wd-clip"])
def test_other_optimizers_batched_on_the_kvstore_equal_eager(opt, kw):
    st = _check(lambda use_jit: _run(use_jit, opt, kw))
    assert _calls(st) == {"push": 4, "pull": 4}, st["kvstore"]


def test_lr_schedule_with_every_key_at_one_step_count_is_batched():
    def kw():
        return {"learning_rate": 0.1, "momentum": 0.9,
                "lr_scheduler": mx.lr_scheduler.FactorScheduler(step=1, factor=0.5)}
    st = _check(lambda use_jit: _run(use_jit, "sgd", kw(), steps=5))
    assert _calls(st) == {"push": 5, "pull": 5}, st["kvstore"]


def test_lr_schedule_with_keys_at_different_step_counts_keeps_mxnet_order():
    """The first layer frozen for two steps: its keys lag two updates behind. The scheduler reads
    the largest count over all keys, which MXNet's one-key-at-a-time calls raise key by key: the
    first layer's keys, updated first, see the old largest count. A call with the lists would
    raise it before; so these steps call the Updater key by key, in MXNet's order."""
    def freeze_first_layer(i, net, trainer):
        req = "null" if i < 2 else "write"
        for p in list(net.collect_params().values())[:2]:
            p.grad_req = req

    def kw():
        return {"learning_rate": 0.1, "lr_scheduler": mx.lr_scheduler.FactorScheduler(step=1, factor=0.5)}
    _check(lambda use_jit: _run(use_jit, "sgd", kw(), steps=5, between=freeze_first_layer))


@pytest.mark.parametrize("make", [lambda: type("MySGD", (mx.optimizer.SGD,), {})(learning_rate=0.1, momentum=0.9),
                                  lambda: mx.optimizer.AdaGrad(learning_rate=0.1)], ids=["subclass", "adagrad"])
def test_other_optimizers_keep_mxnet_pushpull(make):
    """A subclass may override anything the batched call relies on; AdaGrad's update is a dozen
    elementwise ops per weight: MXNet's own loop runs, its updater called back from C."""
    st = _check(lambda use_jit: _run(use_jit, make(), None))
    assert set(_calls(st)) == {"pushpull"}, st["kvstore"]



@pytest.mark.parametrize("kvstore", ["local", "device"])
@pytest.mark.parametrize("kw", [{"learning_rate": 0.1},
                                {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.05}],
                         ids=["sgd", "momentum-wd-clip"])
def test_sgd_on_the_kvstores_arrays_runs_our_kernel(kvstore, kw):
    """The stored weights are on cpu_pinned(0), the reduced gradients on cpu_pinned(0) ('local')
    or cpu(0)/cpu(1) ('device'): no graph takes them, so MXNet's multi_sgd_update ran eagerly;
    our multi-tensor kernel reads CPU memory of any context and runs them as one engine
    operation a step (from step 2: at step 1 the kvstore's set-up and the momenta's creation are
    recorded before it, and MXNet's op runs it). Bit for bit."""
    st = _check(lambda use_jit: _run(use_jit, "sgd", dict(kw), kvstore, steps=4))
    eager_updates = sum(n for r, n in st["fallback_reasons"].items() if r.startswith("multi_sgd"))
    assert eager_updates <= 1, st["fallback_reasons"]
    assert st["trainer_updates"]["direct"] == 4 - eager_updates, st["trainer_updates"]


def _deep_net(ctx):
    mx.random.seed(5)
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation="relu", in_units=20), nn.Dense(16, activation="relu", in_units=32),
            nn.Dense(4, in_units=16))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    return net


@pytest.mark.parametrize("contexts", [3, 4])
@pytest.mark.parametrize("kvstore", ["local", "device"])
@pytest.mark.parametrize("opt,kw", OPTIMIZERS, ids=OPT_IDS)
def test_three_or_more_contexts_sum_gradients_in_eagers_order(opt, kw, kvstore, contexts):
    """A push of several keys groups its arrays by key with an unstable sort, which past 16
    arrays (here 6 parameters x 3 or 4 contexts) may reorder a key's arrays: the kvstore then
    sums the contexts' gradients in another order than MXNet's pushpull of one key, and three
    or more float32 terms round differently (2e-8 to 7e-7 off after a few steps before). Each
    key is pushed alone from three contexts on; two arrays sum to the same bits either way."""
    ctx = [mx.cpu(i) for i in range(contexts)]

    def run(use_jit):
        net = _deep_net(ctx)
        trainer = gluon.Trainer(net.collect_params(), opt, dict(kw), kvstore=kvstore)
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        rs = np.random.RandomState(3)
        snaps = []
        with J(use_jit):
            for _ in range(4):
                x = nd.array(rs.randn(2 * contexts, 20).astype(np.float32))
                y = nd.array(rs.randint(0, 4, size=2 * contexts).astype(np.float32))
                _step(net, trainer, lossfn, x, y, ctx=ctx)
                snaps.append(_weights(net, ctx))
        return snaps

    st = _check(run)
    assert _calls(st) == {"push": 4 * 6, "pull": 4}, st["kvstore"]
