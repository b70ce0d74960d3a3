"""A whole training step as one graph: backward() leaves its trace open (config(whole_step=True)),
so that the optimizer update recorded after it joins the forward and the gradient in one launch.

Each test runs a few steps eagerly and under jit() (each step in its own scope, as a training
loop does; the first step builds the forward and backward at backward(), later ones keep the
trace open) and compares losses, weights, gradients and optimizer states bit for bit; the
launch counts show that the path under test was taken.
"""
import warnings

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import minpy_jit
from conftest import BIG, jit_or_eager, rand

STEPS = 4


def bits(a):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits(eager, jitted):
    assert len(eager) == len(jitted)
    for i, (e, j) in enumerate(zip(eager, jitted)):
        if not isinstance(e, nd.NDArray):
            assert e == j, (i, e, j)
            continue
        assert e.shape == j.shape and e.dtype == j.dtype, i
        assert np.array_equal(bits(e), bits(j)), "array %d differs: max abs %g" % (
            i, np.abs(e.asnumpy().astype(np.float64) - j.asnumpy().astype(np.float64)).max())


@pytest.fixture(autouse=True)
def fresh():
    old = minpy_jit.config()
    minpy_jit.clear_cache()
    minpy_jit.config(recompile_limit=BIG, backward_in_graph=True, whole_step=True)
    yield
    minpy_jit.config(recompile_limit=old["recompile_limit"], backward_in_graph=old["backward_in_graph"],
                     whole_step=old["whole_step"])


def both(run):
    """run(use_jit) -> list of results; eager, then jit(); (eager, jitted, stats over the jit() run)."""
    eager = [a.copy() if isinstance(a, nd.NDArray) else a for a in run(False)]
    minpy_jit.reset_stats()
    jitted = run(True)
    return eager, jitted, minpy_jit.stats()


def mlp(dropout=0.0, bn=False):
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu", in_units=12))
    if bn:
        net.add(nn.BatchNorm(in_channels=16))
    if dropout:
        net.add(nn.Dropout(dropout))
    net.add(nn.Dense(4, in_units=16))
    return net


def gluon_run(opt, kw, between=None, steps=STEPS, setup=None, after=None, **net_kw):
    """A Gluon + Trainer loop; `between(net, trainer)` runs between backward() and step,
    `setup(net)` before the trainer is made, `after(net)` after each step's scope (both
    `between` and `after` return values to compare)."""
    def run(use_jit):
        mx.random.seed(11)
        net = mlp(**net_kw)
        net.initialize(mx.init.Xavier())
        x, y = nd.array(rand(8, 12, seed=1)), nd.array(np.arange(8) % 4)
        net(x)
        if setup:
            setup(net)
        trainer = gluon.Trainer(net.collect_params(), opt, kw)
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        out = []
        for _ in range(steps):
            with jit_or_eager(use_jit):
                with autograd.record():
                    loss = lossfn(net(x), y)
                loss.backward()
                if between:
                    out.extend(between(net, trainer))
                trainer.step(8)
            out.append(loss)
            if after:
                out.extend(after(net))
        params = list(net.collect_params().values())
        states = []
        for st in trainer._updaters[0].states.values():
            states.extend(st if isinstance(st, (list, tuple)) else [st])
        return out + [p.data() for p in params] + [p.grad() for p in params if p.grad_req != "null"] + \
            [s for s in states if isinstance(s, nd.NDArray)]
    return run


@pytest.mark.parametrize("opt,kw", [("sgd", {"learning_rate": 0.1}),
                                    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
                                    ("nag", {"learning_rate": 0.1, "momentum": 0.9}),
                                    ("adam", {"learning_rate": 0.01}),
                                    ("rmsprop", {"learning_rate": 0.01}),
                                    ("adagrad", {"learning_rate": 0.1})],
                         ids=["sgd", "momentum", "nag", "adam", "rmsprop", "adagrad"])
def test_trainer_step_is_one_launch(opt, kw):
    eager, jitted, st = both(gluon_run(opt, kw))
    assert_bits(eager, jitted)
    assert st["backward_by_mxnet"] == 0 and st["eager_replays"] == 0, st
    # the first step builds forward + backward at backward(), the update (and the optimizer's
    # states) after it: a graph, or a direct launch when nothing is recorded before it
    # (update_launch.h); every later step is one graph
    assert st["backward_pending"] == STEPS - 1, st
    assert STEPS + 1 <= st["executions"] + st["trainer_updates"]["direct"] <= STEPS + 2, st
    assert st["flushes"].get("backward", 0) == 1, st["flushes"]


def test_dropout_and_batchnorm_step_is_one_launch():
    eager, jitted, st = both(gluon_run("sgd", {"learning_rate": 0.1, "momentum": 0.9}, dropout=0.3, bn=True))
    assert_bits(eager, jitted)
    assert st["backward_pending"] == STEPS - 1 and st["eager_replays"] == 0, st


def test_reading_a_gradient_between_backward_and_step():
    """param.grad() read (asnumpy) before trainer.step: the read runs the pending graph, and the
    update after it sees the same gradient."""
    def read(net, trainer):
        p = list(net.collect_params().values())[0]
        return [p.grad().asnumpy().sum(), p.grad().copy()]
    eager, jitted, st = both(gluon_run("sgd", {"learning_rate": 0.1, "momentum": 0.9}, between=read))
    assert_bits(eager, jitted)
    # the first step ran its graph at backward(); each later read runs the pending one
    assert st["flushes"].get("asnumpy", 0) == STEPS - 1 and st["backward_pending"] == STEPS - 1, st


def test_scaling_gradients_before_step():
    """Gradients written in place between backward() and step (clipping or scaling by hand)
    through the Parameter's own handle: the update reads the written value."""
    def scale(net, trainer):
        for p in net.collect_params().values():
            g = p.grad()
            g *= 0.5
            nd.clip(g, -0.05, 0.05, out=g)
        return []
    eager, jitted, st = both(gluon_run("sgd", {"learning_rate": 0.1, "momentum": 0.9}, between=scale))
    assert_bits(eager, jitted)
    assert st["backward_pending"] == STEPS - 1 and st["eager_replays"] == 0, st


def test_stale_gradient_warning_as_eager():
    """A second trainer.step without backward() raises Trainer's stale-gradient UserWarning in
    both: the fresh flags set at a backward() left open are what eager's backward sets."""
    def run(use_jit):
        mx.random.seed(11)
        net = mlp()
        net.initialize(mx.init.Xavier())
        x, y = nd.array(rand(8, 12, seed=1)), nd.array(np.arange(8) % 4)
        net(x)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        out = []
        for _ in range(3):
            with jit_or_eager(use_jit):
                with autograd.record():
                    loss = lossfn(net(x), y)
                loss.backward()
                trainer.step(8)
                fresh = [p.data()._fresh_grad for p in net.collect_params().values()]
                try:
                    trainer.step(8)
                    out.append("no warning")
                except UserWarning:
                    out.append("UserWarning")
            out.extend(fresh)
        return out + [p.data() for p in net.collect_params().values()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager, jitted, st = both(run)
    assert eager[0] == "UserWarning"
    assert_bits(eager, jitted)
    assert st["backward_pending"] == 2, st


def nd_run(order, between=None, steps=STEPS):
    """The NDArray form: nd ops under record(), backward(), sgd_mom_update per weight reading
    w.grad, the weights updated in `order`."""
    def run(use_jit):
        rs = np.random.RandomState(4)
        ws = [nd.array(rs.uniform(-.3, .3, s).astype(np.float32)) for s in [(16, 12), (16,), (4, 16), (4,)]]
        moms = [nd.zeros(w.shape) for w in ws]
        for w in ws:
            w.attach_grad()
        x, y = nd.array(rand(8, 12, seed=5)), nd.array(np.arange(8) % 4)
        out = []
        for _ in range(steps):
            with jit_or_eager(use_jit):
                with autograd.record():
                    h = nd.relu(nd.FullyConnected(x, ws[0], ws[1], num_hidden=16))
                    o = nd.FullyConnected(h, ws[2], ws[3], num_hidden=4)
                    loss = nd.mean(-nd.pick(nd.log_softmax(o), y))
                loss.backward()
                if between:
                    out.extend(between(ws, x))
                for i in order:
                    nd.sgd_mom_update(ws[i], ws[i].grad, moms[i], lr=0.1, momentum=0.9, out=ws[i])
            out.append(loss)
        return out + ws + moms + [w.grad for w in ws] + [x]
    return run


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1)], ids=["first-layer-first",
                                                                                  "last-layer-first", "mixed"])
def test_ndarray_form_is_one_launch_in_any_update_order(order):
    """Each update writes its weight in place in the same graph as the gradient nodes that read
    that weight (the data gradient of a layer reads its weight): the writes must wait for every
    gradient node, whatever order the program updates in."""
    eager, jitted, st = both(nd_run(order))
    assert_bits(eager, jitted)
    # the first step's update, flushed alone at scope exit, is launched directly (flush.cc)
    assert st["backward_pending"] == STEPS - 1 and st["executions"] + st["update_flushes_direct"] == STEPS + 1, st


def test_ndarray_form_writing_the_data_after_backward():
    """An array the gradient nodes read (the data: the first layer's weight gradient reads it)
    written after backward() in the same graph: the write waits for them."""
    def write_data(ws, x):
        x[:] = x * 0.5 + 1
        return []
    eager, jitted, st = both(nd_run((0, 1, 2, 3), between=write_data))
    assert_bits(eager, jitted)
    assert st["backward_pending"] == STEPS - 1 and st["eager_replays"] == 0, st


def test_gradient_handle_taken_before_backward():
    """A handle on the gradient buffer taken before the step (g = w.grad outside the scope) and
    read after backward(): it names the gradient the pending graph computes."""
    def run(use_jit):
        rs = np.random.RandomState(6)
        w = nd.array(rs.uniform(-1, 1, (5, 3)).astype(np.float32))
        w.attach_grad()
        g = w.grad
        x = nd.array(rs.uniform(-1, 1, (4, 5)).astype(np.float32))
        out = []
        for _ in range(STEPS):
            with jit_or_eager(use_jit):
                with autograd.record():
                    loss = (nd.relu(nd.dot(x, w)) ** 2).sum()
                loss.backward()
                nd.sgd_update(w, g, lr=0.01, out=w)
            out.append(loss)
        return out + [w, g, w.grad]
    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    # the first step's update, flushed alone at scope exit, is launched directly (flush.cc)
    assert st["backward_pending"] == STEPS - 1 and st["executions"] + st["update_flushes_direct"] == STEPS + 1, st


def test_view_of_a_gradient_taken_before_backward():
    """A view of part of a gradient buffer (a row), taken before the step and read by the update
    after backward(): not the gradient's own array, so it reads the buffer's memory; eager
    reads the new gradient there (the trace runs op by op, never a stale value)."""
    def run(use_jit):
        rs = np.random.RandomState(7)
        w = nd.array(rs.uniform(-1, 1, (3, 4)).astype(np.float32))
        b = nd.array(rs.uniform(-1, 1, (4,)).astype(np.float32))
        w.attach_grad()
        row = w.grad[1]
        x = nd.array(rs.uniform(-1, 1, (2, 3)).astype(np.float32))
        out = []
        for _ in range(STEPS):
            with jit_or_eager(use_jit):
                with autograd.record():
                    loss = (nd.dot(x, w) ** 2).sum()
                loss.backward()
                nd.sgd_update(b, row, lr=0.1, out=b)
            out.append(loss)
        return out + [w.grad, b]
    eager, jitted, st = both(run)
    assert_bits(eager, jitted)


def test_ops_after_backward_that_depend_on_the_training_flag_cut_the_graph():
    """After `with autograd.record():` the program is in predict mode; the graph of a step left
    open runs in train mode. An op whose result depends on the flag (BatchNorm, Dropout) after
    backward() ends the graph before it, and runs in predict mode as eagerly."""
    def run(use_jit):
        mx.random.seed(3)
        net = mlp(dropout=0.5, bn=True)
        net.initialize(mx.init.Xavier())
        x, y = nd.array(rand(8, 12, seed=2)), nd.array(np.arange(8) % 4)
        net(x)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        out = []
        for _ in range(STEPS):
            with jit_or_eager(use_jit):
                with autograd.record():
                    loss = lossfn(net(x), y)
                loss.backward()
                out.append(net(x))  # predict mode: BatchNorm's running statistics, no dropout
                trainer.step(8)
            out.append(loss)
        return out + [p.data() for p in net.collect_params().values()]
    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    assert st["eager_replays"] == 0, st


def test_two_steps_in_one_scope():
    """Two steps inside one jit() scope: the second forward (under record()) ends the first
    step's graph; each step is one graph."""
    def run(use_jit):
        mx.random.seed(5)
        net = mlp()
        net.initialize(mx.init.Xavier())
        x, y = nd.array(rand(8, 12, seed=3)), nd.array(np.arange(8) % 4)
        net(x)
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        out = []
        for _ in range(3):
            with jit_or_eager(use_jit):
                for _ in range(2):
                    with autograd.record():
                        loss = lossfn(net(x), y)
                    loss.backward()
                    trainer.step(8)
                    out.append(loss)
        return out + [p.data() for p in net.collect_params().values()]
    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    assert st["backward_pending"] >= 4 and st["eager_replays"] == 0, st


def test_whole_step_off_gives_two_launches():
    minpy_jit.config(whole_step=False)
    eager, jitted, st = both(gluon_run("sgd", {"learning_rate": 0.1, "momentum": 0.9}))
    assert_bits(eager, jitted)
    # each step: forward + backward, then the update (a graph, or launched directly when nothing is
    # recorded before it and its arrays are allocated, update_launch.h), and the first step's states
    launches = st["executions"] + st["trainer_updates"]["direct"]
    assert st["backward_pending"] == 0 and 2 * STEPS <= launches <= 2 * STEPS + 1, st


def test_fresh_flags_after_an_eager_replay_of_the_open_trace():
    """With MXNet's kernels, NAG's update (nag_mom_update writing a pending weight) replays the
    trace backward() left open op by op, after Trainer.step cleared the fresh-gradient flags:
    MXNet's backward, run then, must not mark them fresh again (it did: a next step without
    backward() then missed Trainer's stale-gradient error)."""
    def flags(net):
        return [[p.data()._fresh_grad for p in net.collect_params().values()]]

    previous = minpy_jit.config()["fuse"]
    minpy_jit.config(fuse=False)
    try:
        eager, jitted, st = both(gluon_run("nag", {"learning_rate": 0.1, "momentum": 0.9}, after=flags))
    finally:
        minpy_jit.config(fuse=previous)
    assert_bits(eager, jitted)
    assert st["eager_replays"] >= 1, st  # the path under test


def test_frozen_weight_with_a_trainable_bias_as_eager():
    """A layer whose weight is frozen (grad_req='null') and whose bias trains: MXNet 1.9.1's
    oneDNN FullyConnected backward writes the bias gradient only with the weight's, so eagerly
    the bias gradient keeps what its buffer held. MXNet's own backward runs (ours would write
    the true sums); the bias stays as eager leaves it, step after step."""
    def freeze(net):
        net[0].weight.grad_req = "null"

    eager, jitted, st = both(gluon_run("sgd", {"learning_rate": 0.1, "momentum": 0.9}, setup=freeze))
    assert_bits(eager, jitted)
    assert st["backward_by_mxnet"] == STEPS, st  # the path under test
