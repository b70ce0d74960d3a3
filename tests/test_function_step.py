"""A training step as one @minpy_jit.function fragment.

`with autograd.record():`, `loss.backward()` and `trainer.step()` (or a hand-written update)
are captured together; a replay is one graph launch computing the forward, the gradients
(inside the graph, backward.cc) and the update, writing each gradient into the buffer autograd
keeps for its variable, found again at every call (a guard, with what autograd knows of every
array the recorded ops read). Every test compares with the undecorated function run eagerly,
bit for bit: values, gradients, fresh-gradient flags, optimizer state.
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import minpy_jit
from minpy_jit import _core, intercept

from conftest import arr, assert_same, rand

LOSS = gluon.loss.SoftmaxCrossEntropyLoss()


@pytest.fixture(autouse=True, params=["our kernels", "mxnet kernels"])
def _isolate(request, isolated_runtime):
    if request.param == "mxnet kernels":
        minpy_jit.config(fuse=False)
    _core.fragment_reset_stats()
    yield
    assert not intercept.hooks_active()


def mlp(seed=3, grad_req="write"):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(16, in_units=8, activation="relu"), nn.Dense(4, in_units=16))
    net.initialize(mx.init.Xavier())
    if grad_req != "write":
        net.collect_params().setattr("grad_req", grad_req)
    return net


def pair(seed=3, grad_req="write", optimizer="sgd", **params):
    """Two equal networks with their trainers: (eager's, the function's)."""
    out = []
    for _ in range(2):
        net = mlp(seed, grad_req)
        out.append((net, gluon.Trainer(net.collect_params(), optimizer, params or {"learning_rate": 0.1})))
    return out


def step(net, trainer, x, y):
    with autograd.record():
        loss = LOSS(net(x), y).mean()
    loss.backward()
    trainer.step(1)
    return loss


def assert_nets_same(eager, function):
    (ne, te), (nf, tf) = eager, function
    for pe, pf in zip(ne.collect_params().values(), nf.collect_params().values()):
        assert_same(pe.data(), pf.data())
        assert_same(pe.grad(), pf.grad())
        assert pe.data()._fresh_grad == pf.data()._fresh_grad
    states = te._updaters[0].states, tf._updaters[0].states
    assert sorted(states[0]) == sorted(states[1])
    for k in states[0]:
        assert_same(states[0][k], states[1][k])
    assert te.optimizer.num_update == tf.optimizer.num_update


def data(seed=1, n=6):
    return arr(rand(n, 8, seed=seed)), arr((np.arange(n) % 4).astype(np.float32))


OPTIMIZERS = [("sgd", {}), ("sgd", dict(learning_rate=0.05, momentum=0.9, wd=0.01)),
              ("nag", dict(learning_rate=0.05, momentum=0.9)), ("signum", dict(learning_rate=0.01, momentum=0.9)),
              ("rmsprop", dict(learning_rate=0.01, clip_gradient=0.5)), ("rmsprop", dict(learning_rate=0.01, centered=True)),
              ("adagrad", dict(learning_rate=0.05)), ("adadelta", {}), ("ftrl", dict(learning_rate=0.1))]


@pytest.mark.parametrize("optimizer, params", OPTIMIZERS,
                         ids=["sgd", "momentum", "nag", "signum", "rmsprop", "rmsprop-centered", "adagrad", "adadelta",
                              "ftrl"])
def test_step_is_one_fragment_replayed_as_one_launch(optimizer, params):
    """Every optimizer whose update reads no update count: its Trainer.step is part of the
    fragment, its state (momentum, history...) updated in place by the replay as eagerly."""
    eager, function = pair(optimizer=optimizer, **params)
    x, y = data()
    fstep = minpy_jit.function(step)
    assert len(fstep.fragments) == 1 and not fstep.plan.boundaries
    for i in range(6):
        before = minpy_jit.stats()["executions"]
        assert_same(step(*eager, x, y), fstep(*function, x, y))
        assert_nets_same(eager, function)
        if i >= 2:  # captured on the second call (the trainer initialises itself on its first)
            assert minpy_jit.stats()["executions"] == before + 1
    info = fstep.fragments[0].info()
    assert info["direct"] == 4 and len(info["variants"]) == 1, (info, fstep.messages)


def test_step_inside_a_jit_scope_after_pending_work():
    eager, function = pair()
    x, y = data()
    fstep = minpy_jit.function(step)

    def outer(f, model):
        z = x * 0.5 + 0.25  # pending when the step is called inside jit()
        loss = f(*model, z, y)
        return loss * 3, z

    for _ in range(4):
        want = outer(step, eager)
        with minpy_jit.jit():
            got = outer(fstep, function)
        assert_same(want, got)
        assert_nets_same(eager, function)
    # inside jit() the step joins the scope's trace (after what was pending ran), which runs at
    # the scope's exit with its backward and update as one graph
    assert fstep.fragments[0].info()["appended"] >= 2, fstep.messages


def test_an_input_that_becomes_a_variable_is_differentiated():
    eager, function = pair()
    x, y = data()
    xe, xf = x.copy(), x.copy()
    fstep = minpy_jit.function(step)
    for _ in range(3):
        assert_same(step(*eager, xe, y), fstep(*function, xf, y))
    xe.attach_grad()
    xf.attach_grad()
    for _ in range(3):
        assert_same(step(*eager, xe, y), fstep(*function, xf, y))
        assert_same(xe.grad, xf.grad)
        assert_nets_same(eager, function)
    assert any("autograd" in m and "otherwise" in m for m in fstep.messages), fstep.messages


def sgd_by_hand(w, b, x, y, lr):
    with autograd.record():
        loss = ((nd.dot(x, w) + b - y) ** 2).mean()
    loss.backward()
    w -= lr * w.grad
    b -= lr * b.grad
    return loss


def attached_weights():
    """Two equal (w, b) pairs with gradient buffers: (eager's, the function's); the data."""
    arrays = []
    for _ in range(2):
        w, b = arr(rand(8, 3, seed=4)), arr(rand(3, seed=5))
        w.attach_grad()
        b.attach_grad()
        arrays.append((w, b))
    return arrays, arr(rand(6, 8, seed=6)), arr(rand(6, 3, seed=7))


def test_hand_written_update_of_attached_arrays():
    arrays, x, y = attached_weights()
    f = minpy_jit.function(sgd_by_hand)
    for _ in range(5):
        (we, be), (wf, bf) = arrays
        assert_same(sgd_by_hand(we, be, x, y, 0.1), f(wf, bf, x, y, 0.1))
        for e, g in zip(arrays[0], arrays[1]):
            assert_same(e, g)
            assert_same(e.grad, g.grad)
            assert e._fresh_grad == g._fresh_grad
    assert f.fragments[0].info()["direct"] >= 3, f.messages


def test_a_new_gradient_buffer_is_written():
    """attach_grad() again gives the variable a new buffer: the replay writes that one."""
    arrays, x, y = attached_weights()
    f = minpy_jit.function(sgd_by_hand)
    for i in range(6):
        if i == 3:
            for w, _ in arrays:
                w.attach_grad()
        (we, be), (wf, bf) = arrays
        assert_same(sgd_by_hand(we, be, x, y, 0.1), f(wf, bf, x, y, 0.1))
        for e, g in zip(arrays[0], arrays[1]):
            assert_same(e, g)
            assert_same(e.grad, g.grad)


def forward_recorded(net, x):
    with autograd.record():
        out = (net(x) * 2).sum()
    return out


def test_recorded_forward_then_backward_outside():
    """The statements open the recording themselves: the replay is recorded by MXNet, so a
    backward() after the call reaches the parameters as eagerly."""
    ne, nf = mlp(), mlp()
    x, _ = data()
    xe, xf = x.copy(), x.copy()  # one array read by both graphs: the first backward frees its history
    f = minpy_jit.function(forward_recorded)
    for _ in range(4):
        want, got = forward_recorded(ne, xe), f(nf, xf)
        want.backward()
        got.backward()
        assert_same(want, got)
        for pe, pf in zip(ne.collect_params().values(), nf.collect_params().values()):
            assert_same(pe.grad(), pf.grad())
    assert f.fragments[0].info()["direct"] >= 2, f.messages


@pytest.mark.parametrize("backward", ["retain_graph", "grad_req add"])
def test_backward_outside_the_graph_stays_python(backward):
    """What backward_in_graph refuses (backward.cc) runs MXNet's own backward: the capture sees
    it and splits the function there (a graph break); every call gives eager's result."""
    eager, function = pair(grad_req="add" if backward == "grad_req add" else "write")
    x, y = data()

    def retaining(net, trainer, x, y):
        with autograd.record():
            loss = LOSS(net(x), y).mean()
        loss.backward(retain_graph=True)
        trainer.step(1)
        return loss

    fn = retaining if backward == "retain_graph" else step
    f = minpy_jit.function(fn)
    for _ in range(5):
        assert_same(fn(*eager, x, y), f(*function, x, y))
        assert_nets_same(eager, function)
    assert f.breaks, f.messages


def test_explain_shows_the_step_as_one_fragment():
    _, function = pair()
    x, y = data()
    fstep = minpy_jit.function(step)
    for _ in range(3):
        fstep(*function, x, y)
    text = str(fstep.explain(*function, x, y))
    assert "1 fragment, 0 boundaries" in text, text
    assert "runs backward() inside its graph (4 gradients)" in text, text


def step_after_an_op(net, trainer, x, y):
    x = x * 0.5 + 0.25  # not recorded: the step's autograd segment starts a fragment of its own
    with autograd.record():
        loss = LOSS(net(x), y).mean()
    loss.backward()
    trainer.step(1)
    return loss


def test_ops_before_the_recording_make_a_fragment_of_their_own():
    eager, function = pair()
    x, y = data()
    f = minpy_jit.function(step_after_an_op)
    assert len(f.fragments) == 2 and not f.plan.boundaries
    for _ in range(5):
        assert_same(step_after_an_op(*eager, x, y), f(*function, x, y))
        assert_nets_same(eager, function)
    assert not f.breaks and f.fragments[1].info()["appended"] >= 2, f.messages


def test_threads_training_their_own_networks_with_one_function():
    """One decorated step shared by threads, each with its own network and trainer: each
    thread's variant guards its own arrays; every thread's weights equal its eager twin's. Each
    new trainer's first step refuses a capture without splitting the step (counted per trainer)."""
    import threading
    fstep = minpy_jit.function(step)
    x, y = data()
    models = [pair(seed=s) for s in (3, 4, 5)]
    errors = []

    def train(eager, function):
        # arrays of its own for each run: eager's backward frees the history of every array its
        # graph read, which another thread's recorded graph may still hold
        xe, ye, xf, yf = x.copy(), y.copy(), x.copy(), y.copy()
        try:
            for _ in range(6):
                assert_same(step(*eager, xe, ye), fstep(*function, xf, yf))
            assert_nets_same(eager, function)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=train, args=m) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    # (How many calls replayed depends on the threads' timing: a read on one thread flushes
    # what the others recorded, a capture under way among it, which is then refused.)


def test_a_second_new_trainer_does_not_split_the_step():
    """Trainer.step's first call initialises the trainer (a capture is refused). A function
    used with one new trainer after another must not take that for a lasting reason."""
    fstep = minpy_jit.function(step)
    x, y = data()
    for seed in (3, 4, 5, 6):
        eager, function = pair(seed=seed)
        for _ in range(3):
            assert_same(step(*eager, x, y), fstep(*function, x, y))
        assert_nets_same(eager, function)
    assert len(fstep.fragments) == 1 and not fstep.breaks, fstep.messages
    assert fstep.fragments[0].info()["direct"] == 4, fstep.messages  # the third call of each


@pytest.mark.parametrize("whole_step", [True, False])
def test_step_inside_a_jit_scope_with_or_without_whole_steps(whole_step):
    """Appended to a scope's trace, the variant's backward node leaves the trace open for what
    follows, as jit()'s backward() does with config(whole_step=True). Without whole steps jit()'s
    backward() runs its trace at once, so no capture can hold it: the statement is split off."""
    previous = minpy_jit.config()["whole_step"]
    minpy_jit.config(whole_step=whole_step)
    try:
        eager, function = pair(learning_rate=0.1, momentum=0.9)
        x, y = data()
        fstep = minpy_jit.function(step)
        for _ in range(5):
            want = step(*eager, x, y) * 2
            with minpy_jit.jit():
                got = fstep(*function, x, y) * 2  # an op after the step, in the same scope
            assert_same(want, got)
            assert_nets_same(eager, function)
        if whole_step:
            assert fstep.fragments[0].info()["appended"] >= 3, fstep.messages
        else:
            assert list(fstep.breaks) == [step.__code__.co_firstlineno + 3], fstep.messages  # its backward()
    finally:
        minpy_jit.config(whole_step=previous)


def step_per_sample(net, trainer, x, y):
    with autograd.record():
        loss = LOSS(net(x), y)
    loss.backward()
    trainer.step(x.shape[0])  # the gradient rescale (1 / batch) the step sets: an effect
    return loss


def test_batches_of_changing_size_replay_without_splitting_the_step():
    """An epoch's last batch is smaller: Trainer.step sets the optimizer's rescale_grad from the
    batch size on every call. That is an effect of the replay (its value decided by the guarded
    shape), not a change that splits the step off or a guard that multiplies the variants."""
    eager, function = pair(learning_rate=0.1, momentum=0.9)
    f = minpy_jit.function(step_per_sample)
    for i, rows in enumerate([6, 6, 4, 6, 4, 6, 4, 6]):
        x, y = data(seed=i, n=rows)
        assert_same(step_per_sample(*eager, x, y), f(*function, x, y))
        assert_nets_same(eager, function)
        assert eager[1].optimizer.rescale_grad == function[1].optimizer.rescale_grad
    info = f.fragments[0].info()
    assert not f.breaks and len(info["variants"]) == 2 and info["direct"] >= 4, (info, f.messages)
