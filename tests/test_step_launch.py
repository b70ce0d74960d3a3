"""A training step -- forward, backward() and trainer.step -- whose graph is made of our GEMMs,
our updates and MXNet's small loss operators runs as one direct launch, not a CachedOp
(cpp/src/kernel_launch.h; the loss operators by the kernel library's stand-ins, step_ops.cc,
each checked against MXNet's operator before use: launch_check.h). Every case compares with
eager MXNet bit for bit and checks which way the step ran (stats()['kernels_launched_directly'])."""
import contextlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import minpy_jit

from conftest import arr, assert_same, direct_launches, rand


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    minpy_jit.clear_cache()
    yield


def mlp(weights=None):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(32, in_units=20, activation="relu"), nn.Dense(32, in_units=32, activation="relu"),
                nn.Dense(10, in_units=32))
    net.initialize(mx.init.Xavier())
    if weights is not None:
        for p, w in zip(net.collect_params().values(), weights):
            p.set_data(w)
    return net


LOSS = gluon.loss.SoftmaxCrossEntropyLoss()


def step(net, trainer, x, y):
    with autograd.record():
        loss = LOSS(net(x), y).mean()
    loss.backward()
    trainer.step(1)
    return loss


def train(mode, optimizer, params, weights, x, y, steps=5):
    net = mlp(weights)
    trainer = gluon.Trainer(net.collect_params(), optimizer, dict(params))
    step_fn = minpy_jit.function(step) if mode == "function" else None  # planned anew for each run
    losses = []
    for _ in range(steps):
        if mode == "jit":
            with minpy_jit.jit():
                loss = step(net, trainer, x, y)
        elif mode == "function":
            loss = step_fn(net, trainer, x, y)
        else:
            loss = step(net, trainer, x, y)
        losses.append(loss)
    ps = list(net.collect_params().values())
    return losses, [p.data() for p in ps], [p.grad() for p in ps]


@pytest.mark.parametrize("mode", ["jit", "function"])
@pytest.mark.parametrize("optimizer, params, direct", [
    ("sgd", {"learning_rate": 0.1}, True),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}, True),
    ("nag", {"learning_rate": 0.05, "momentum": 0.9}, True),
    ("adam", {"learning_rate": 0.01}, True),  # its rate changes every step: an input of the update
    ("rmsprop", {"learning_rate": 0.01, "clip_gradient": 0.5}, True),
], ids=["sgd", "momentum", "nag", "adam", "rmsprop"])
def test_gluon_step_is_one_launch_and_matches_eager(mode, optimizer, params, direct):
    mx.random.seed(3)
    weights = [p.data().copy() for p in mlp().collect_params().values()]
    x = arr(rand(16, 20, seed=4) * 3)
    y = nd.array(np.random.RandomState(5).randint(0, 10, 16).astype(np.float32))
    want = train("eager", optimizer, params, weights, x, y)
    before = direct_launches()
    got = train(mode, optimizer, params, weights, x, y)
    assert_same(want, got)
    if direct:
        # jit(): every step after the first (which compiles). @function: every step once the
        # function settled -- the whole step is one fragment, and an optimizer a replay cannot
        # model (Adam's counts) splits trainer.step off, the rest captured again: the last two
        # of the five steps at least
        assert direct_launches() - before >= (4 if mode == "jit" or optimizer in ("sgd", "nag") else 2)
    assert minpy_jit.stats()["fallbacks"] == {}


def loss_head(x, label, scale):
    """nd form of softmax cross-entropy: log_softmax, pick, a scalar multiply and two means."""
    with autograd.record():
        lp = nd.log_softmax(x, axis=-1)
        picked = nd.pick(lp, label, axis=-1, keepdims=True)
        loss = nd.mean(nd.mean(picked * scale, axis=0, exclude=True))
    loss.backward()
    return loss


@pytest.mark.parametrize("rows, cols", [(7, 10), (3, 17), (1, 1), (33, 100)])
def test_loss_operators_with_special_values_match_eager(rows, cols):
    data = rand(rows, cols, seed=rows * cols) * 40
    data.flat[::7] = np.nan
    data.flat[3::11] = np.inf
    data.flat[5::13] = -np.inf
    data.flat[2::9] = -0.0
    labels = np.arange(rows, dtype=np.float32) * 1.5 - 2.0  # below range, fractions, beyond the last column
    labels[::4] = np.nan
    results = {}
    for mode in ("eager", "jit"):
        x = arr(data)
        x.attach_grad()
        label = arr(labels)
        if mode == "jit":
            before = direct_launches()
            with minpy_jit.jit():
                loss = loss_head(x, label, -1.0)
            results[mode] = (loss, x.grad)
            assert_same(results["eager"], results["jit"])
            assert direct_launches() == before + 1
        else:
            results[mode] = (loss_head(x, label, -1.0), x.grad)


@pytest.mark.parametrize("form", ["pick_wrap", "column_mean", "softmax_first_axis"])
def test_forms_without_a_stand_in_keep_the_cached_op(form):
    def program(x, label):
        with autograd.record():
            if form == "pick_wrap":
                y = nd.pick(x, label, axis=-1, mode="wrap")
            elif form == "column_mean":
                y = nd.mean(x, axis=0)
            else:
                y = nd.log_softmax(x, axis=0)
            loss = nd.mean(y * 2.0)
        loss.backward()
        return loss

    data, labels = rand(6, 5, seed=8), np.array([0, 7, -3, 2, 4, 1], dtype=np.float32)
    x_e, x_j = arr(data), arr(data)
    x_e.attach_grad()
    x_j.attach_grad()
    l_e, l_j = arr(labels), arr(labels)
    want = (program(x_e, l_e), x_e.grad)
    before = direct_launches()
    with minpy_jit.jit():
        got = (program(x_j, l_j), x_j.grad)
    assert_same(want, got)
    assert direct_launches() == before


def test_switched_off_the_step_runs_the_cached_op_with_the_same_bits():
    mx.random.seed(6)
    weights = [p.data().copy() for p in mlp().collect_params().values()]
    x = arr(rand(16, 20, seed=7))
    y = nd.array(np.random.RandomState(8).randint(0, 10, 16).astype(np.float32))
    params = {"learning_rate": 0.1, "momentum": 0.9}
    on = train("jit", "sgd", params, weights, x, y)
    minpy_jit.config(direct_kernels=False)
    try:
        before = direct_launches()
        off = train("jit", "sgd", params, weights, x, y)
        assert direct_launches() == before
    finally:
        minpy_jit.config(direct_kernels=True)
    assert_same(on, off)


def nd_step(ws, x, y):
    """W3's NDArray form: nd ops, autograd, nd.relu, and one sgd_update per weight."""
    with autograd.record():
        h = x
        for i in range(0, len(ws) - 2, 2):
            h = nd.relu(nd.FullyConnected(h, ws[i], ws[i + 1], num_hidden=ws[i].shape[0]))
        out = nd.FullyConnected(h, ws[-2], ws[-1], num_hidden=ws[-2].shape[0])
        loss = nd.mean(-nd.pick(nd.log_softmax(out), y))
    loss.backward()
    for w in ws:
        nd.sgd_update(w, w.grad, lr=0.1, out=w)
    return loss


def test_ndarray_form_step_is_one_launch_and_matches_eager():
    mx.random.seed(9)
    weights = [p.data().asnumpy() for p in mlp().collect_params().values()]
    x = arr(rand(16, 20, seed=10) * 2)
    y = nd.array(np.random.RandomState(11).randint(0, 10, 16).astype(np.float32))
    results = {}
    for mode in ("eager", "jit"):
        ws = [arr(w) for w in weights]
        for w in ws:
            w.attach_grad()
        losses = []
        before = direct_launches()
        for _ in range(4):
            if mode == "jit":
                with minpy_jit.jit():
                    losses.append(nd_step(ws, x, y))
            else:
                losses.append(nd_step(ws, x, y))
        results[mode] = (losses, ws, [w.grad for w in ws])
        if mode == "jit":
            assert direct_launches() - before >= 3
    assert_same(results["eager"], results["jit"])


def test_relu_and_its_gradient_on_special_values_match_eager():
    data = rand(9, 11, seed=12) * 10
    data.flat[::5] = np.nan
    data.flat[1::7] = -np.nan
    data.flat[2::6] = np.inf
    data.flat[3::8] = -0.0
    head = rand(9, 11, seed=13)
    head.flat[::4] = np.nan
    head.flat[1::9] = -np.inf
    results = {}
    minpy_jit.config(fuse=False)  # nd.relu as MXNet's operator, not part of a fused unit
    for mode in ("eager", "jit"):
        x, g = arr(data), arr(head)
        x.attach_grad()
        before = direct_launches()
        with (minpy_jit.jit() if mode == "jit" else contextlib.nullcontext()):
            with autograd.record():
                y = nd.relu(x)
            y.backward(g)
        results[mode] = (y, x.grad)
        if mode == "jit":
            assert direct_launches() == before + 1
    assert_same(results["eager"], results["jit"])



@pytest.mark.parametrize("shape", [(8, 5), (3, 1, 4)])
def test_fused_units_with_gradients_are_part_of_the_launch(shape):
    """An elementwise chain under record() is a fused unit whose backward is a fused program
    (_backward__minpy_fused_elemwise): it runs inside the launch too, sum and its gradient by
    their stand-ins; specials in the data."""
    data = rand(*shape, seed=14) * 3
    data.flat[::6] = np.nan
    data.flat[1::7] = np.inf
    data.flat[2::5] = -0.0
    other = rand(*shape, seed=15)
    results = {}
    for mode in ("eager", "jit"):
        x, w = arr(data), arr(other)
        x.attach_grad()
        w.attach_grad()
        before = direct_launches()
        with (minpy_jit.jit() if mode == "jit" else contextlib.nullcontext()):
            with autograd.record():
                y = (nd.tanh(x * w + 0.5) * nd.sigmoid(w) - x / 3).sum()
            y.backward()
        results[mode] = (y, x.grad, w.grad)
        if mode == "jit":
            assert direct_launches() == before + 1
    assert_same(results["eager"], results["jit"])


def test_tanh_mlp_trains_in_one_launch_as_eagerly():
    def tanh_mlp():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(32, in_units=20, activation="tanh"), nn.Dense(10, in_units=32))
        net.initialize(mx.init.Xavier())
        return net

    mx.random.seed(16)
    weights = [p.data().copy() for p in tanh_mlp().collect_params().values()]
    x = arr(rand(16, 20, seed=17))
    y = nd.array(np.random.RandomState(18).randint(0, 10, 16).astype(np.float32))
    results = {}
    for mode in ("eager", "jit"):
        net = tanh_mlp()
        for p, w in zip(net.collect_params().values(), weights):
            p.set_data(w)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2, "momentum": 0.5})
        before = direct_launches()
        losses = []
        for _ in range(5):
            with (minpy_jit.jit() if mode == "jit" else contextlib.nullcontext()):
                losses.append(step(net, trainer, x, y))
        results[mode] = (losses, [p.data() for p in net.collect_params().values()])
        if mode == "jit":
            assert direct_launches() - before >= 4
    assert_same(results["eager"], results["jit"])


def test_row_of_an_array_onednn_wrote_is_read_as_eagerly():
    """fuzz seed 11953696: a row view of concat's output (which oneDNN may leave in its blocked
    layout) summed: not a direct launch (a view starting inside its storage), eager's value."""
    rng = np.random.RandomState(0)
    parts = [rng.uniform(-2, 2, (4, n)).astype(np.float32) for n in (1, 2, 2)]
    want = nd.concat(*[arr(p) for p in parts], dim=1)[1].sum()
    ins = [arr(p) for p in parts]
    with minpy_jit.jit():
        row = nd.concat(*ins, dim=1)[1]
        got = row.sum().asscalar()
    assert np.array_equal(np.float32(got), want.asnumpy()[0])
