"""@minpy_jit.function with Gluon: a block's call inside a fragment, `minpy_jit.function(net)`,
a recurrent cell stepped in a loop, and a training step (forward, backward, Trainer.step).

A block call is captured with guards on the block's state as its forward reads it (every
plain attribute of it and of the blocks below it, hooks, hybridization, each parameter's
arrays); call counters (RecurrentCell._counter) are stepped by each replay as the call
would have.
"""
import contextlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn, rnn

import minpy_jit
from minpy_jit import _core, intercept

from conftest import arr, assert_same, rand


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime, mxnet_kernels):  # MXNet's kernels: compared at float32 tolerance
    _core.fragment_reset_stats()
    yield
    assert not intercept.hooks_active()


def mlp(seed=0):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(16, in_units=8, activation="relu"), nn.Dense(4, in_units=16))
    net.initialize(mx.init.Xavier())
    return net


def test_function_of_a_block_replays_its_forward():
    net = mlp()
    fnet = minpy_jit.function(net)
    x = arr(rand(5, 8))
    for _ in range(3):
        assert_same(net(x), fnet(x))
    assert _core.fragment_stats()["replayed"] == 2
    assert list(fnet.collect_params().keys()) == list(net.collect_params().keys())  # the block's own


def test_new_parameter_values_are_used():
    net = mlp()
    fnet = minpy_jit.function(net)
    x = arr(rand(5, 8))
    fnet(x)
    net[0].weight.set_data(nd.ones((16, 8)))  # in place: same arrays, new data
    assert_same(net(x), fnet(x))
    net.initialize(mx.init.Uniform(), force_reinit=True)  # new arrays
    assert_same(net(x), fnet(x))


def test_block_attribute_change_is_seen():
    net = nn.Dense(4, in_units=3, flatten=False)
    net.initialize()
    f = minpy_jit.function(net)
    x = arr(rand(2, 5, 3))
    assert_same(net(x), f(x))
    net._flatten = False
    assert_same(net(x), f(x))
    net.weight.grad_req  # noqa: B018 - reading is no change


def test_hybridized_block_is_a_boundary_and_stays_right():
    net = mlp()
    f = minpy_jit.function(net)
    x = arr(rand(5, 8))
    f(x)
    net.hybridize()
    for _ in range(3):
        assert_same(mlp()(x), f(x))


def test_a_block_defined_outside_gluon_is_not_replayed():
    class Scale(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.k = 2.0

        def hybrid_forward(self, F, x):
            return x * self.k

    blk = Scale()
    f = minpy_jit.function(blk)
    x = arr(rand(3))
    for k in (2.0, 3.0):
        blk.k = k
        assert_same(x * k, f(x))
    assert any("defined outside mxnet.gluon" in m for m in f.messages), f.messages


def test_lstm_cell_sequence_is_one_graph_and_counts_its_calls():
    cell = rnn.LSTMCell(16, input_size=8)
    cell.initialize(mx.init.Xavier())
    T = 6

    @minpy_jit.function
    def run(xs, h, c):
        states = [h, c]
        outs = []
        for t in range(T):
            out, states = cell(xs[t], states)
            outs.append(out)
        return outs, states

    xs = [arr(rand(4, 8, seed=s)) for s in range(T)]
    h, c = nd.zeros((4, 16)), nd.zeros((4, 16))
    for _ in range(3):
        before = cell._counter
        got = run(xs, h, c)
        assert cell._counter == before + T
        want = run.original(xs, h, c)
        assert_same(want, got)
    st = _core.fragment_stats()
    assert st["replayed"] == 2 and st["captures"] == 1, st


def mlp_with_trainer(seed, **sgd_params):
    net = mlp(seed)
    return net, gluon.Trainer(net.collect_params(), "sgd", sgd_params)


loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()  # (L2Loss reshapes its label: a view, a boundary)


def train_step(net, trainer, x, y):
    with autograd.record():
        loss = loss_fn(net(x), y).mean()
    loss.backward()
    trainer.step(1)
    return loss


def test_training_step_with_backward_and_trainer():
    net1, tr1 = mlp_with_trainer(3, learning_rate=0.1, momentum=0.9)
    net2, tr2 = mlp_with_trainer(3, learning_rate=0.1, momentum=0.9)
    x, y = arr(rand(6, 8)), arr(np.arange(6, dtype=np.float32) % 4)

    fstep = minpy_jit.function(train_step)
    for _ in range(4):
        assert_same(train_step(net2, tr2, x, y), fstep(net1, tr1, x, y))
        for p1, p2 in zip(net1.collect_params().values(), net2.collect_params().values()):
            assert_same(p2.data(), p1.data())
    assert tr1.optimizer.num_update == tr2.optimizer.num_update


@pytest.mark.parametrize("sgd", [dict(learning_rate=0.1), dict(learning_rate=0.1, momentum=0.9, wd=0.01)])
def test_training_step_runs_as_one_graph_as_under_jit(sgd):
    """The whole step -- `with autograd.record():`, backward(), Trainer.step -- is one fragment:
    once captured, a call is one graph launch with no jit() scope (jit() runs it as one graph
    too, flushed at its scope's exit); weights, loss, gradients, fresh-gradient flags and
    optimizer state equal eager's bit for bit."""
    def whole_step(net, trainer, x, y):  # train_step's body, at a site (recompile counts) of its own
        with autograd.record():
            loss = loss_fn(net(x), y).mean()
        loss.backward()
        trainer.step(1)
        return loss

    nets = {m: mlp_with_trainer(7, **sgd) for m in ("eager", "function", "jit")}
    x, y = arr(rand(6, 8, seed=8)), arr(np.arange(6, dtype=np.float32) % 4)
    fstep = minpy_jit.function(whole_step)

    def run(mode):
        net, trainer = nets[mode]
        if mode == "function":
            return fstep(net, trainer, x, y)
        with minpy_jit.jit() if mode == "jit" else contextlib.nullcontext():
            return whole_step(net, trainer, x, y)

    for step in range(5):
        minpy_jit.reset_stats()
        losses = {m: run(m) for m in ("function", "jit")}
        st = minpy_jit.stats()
        losses["eager"] = run("eager")
        if step >= 2:  # captured and compiled: the function's step is one launch, as jit()'s
            assert st["executions"] == 2 and st["flushes"] == {"scope exit": 1}, (st, fstep.messages)
            info = fstep.fragments[0].info()
            assert len(fstep.fragments) == 1 and info["direct"] == step - 1, (info, fstep.messages)
        for m in ("function", "jit"):
            assert_same(losses["eager"], losses[m])
            for pe, pm in zip(nets["eager"][0].collect_params().values(), nets[m][0].collect_params().values()):
                assert_same(pe.data(), pm.data())
                assert_same(pe.grad(), pm.grad())
                assert pe.data()._fresh_grad == pm.data()._fresh_grad
            states = [nets[k][1]._updaters[0].states for k in ("eager", m)]
            assert sorted(states[0]) == sorted(states[1])
            for k in states[0]:
                assert_same(states[0][k], states[1][k])
    assert fstep.fragments[-1].info()["hits"] >= 3 and not fstep.breaks, fstep.messages


def test_dropout_in_train_mode_draws_as_eager():
    net = nn.HybridSequential()
    net.add(nn.Dense(8, in_units=4), nn.Dropout(0.5))
    net.initialize()
    f = minpy_jit.function(net)
    x = arr(rand(3, 4))
    for seed in (1, 2, 1):
        with autograd.train_mode():
            mx.random.seed(seed)
            got = f(x)
            mx.random.seed(seed)
            want = net(x)
        assert_same(want, got)
    assert_same(net(x), f(x))  # predict mode: another variant


def test_trainer_step_is_replayed_with_its_counters_and_flags():
    """Trainer.step is a known call: its update ops are replayed, the optimizer's update
    counts are stepped, the weights' fresh-gradient flags cleared -- as a Python step does."""
    n1, t1 = mlp_with_trainer(5, learning_rate=0.05, momentum=0.5, wd=0.01)
    n2, t2 = mlp_with_trainer(5, learning_rate=0.05, momentum=0.5, wd=0.01)
    x, y = arr(rand(6, 8)), arr(np.arange(6, dtype=np.float32) % 4)

    fstep = minpy_jit.function(train_step)
    for i in range(5):
        if i == 3:  # a new learning rate: the optimizer's lr is a guard
            t1.set_learning_rate(0.02)
            t2.set_learning_rate(0.02)
        assert_same(train_step(n2, t2, x, y), fstep(n1, t1, x, y))
        for p1, p2 in zip(n1.collect_params().values(), n2.collect_params().values()):
            assert_same(p2.data(), p1.data())
            assert p1.data()._fresh_grad == p2.data()._fresh_grad
        o1, o2 = t1._optimizer, t2._optimizer
        assert (o1.num_update, o1._index_update_count) == (o2.num_update, o2._index_update_count)
    assert not fstep.breaks, fstep.messages  # first-step effects (initialisation, momentum states) pass
    frag = fstep.fragments[-1]
    assert frag.info()["hits"] >= 1, frag.info()
    assert any("optimizer" in g["what"] for v in frag.info()["variants"] for g in v["guards"])


def test_trainer_step_without_a_new_gradient_raises_as_eager():
    net = mlp(6)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = arr(rand(3, 8))

    @minpy_jit.function
    def step(x):
        with autograd.record():
            loss = net(x).sum()
        loss.backward()
        trainer.step(1)
        return loss

    @minpy_jit.function
    def update_only():
        trainer.step(1)

    for _ in range(3):
        step(x)
    with pytest.raises(UserWarning, match="has not been updated by backward"):
        update_only()
