"""backward() inside our graph: the recorded forward and MXNet's gradient of it run as one launch.

A training step under jit() is then one launch (forward, backward and the optimizer update: the
trace stays open past backward(), config(whole_step=True), from the second step on), or two
with whole_step=False (forward + backward, then the update), and no MXNet autograd backward call. Gradients, losses and weights are compared bit for bit with
eager MXNet; the cases where the graph cannot give eager's result must leave backward() to
MXNet's autograd (stats()['backward_by_mxnet']) and still match.
"""
import contextlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import minpy_jit
from conftest import BIG, jit_or_eager


def bits(a):
    a = a.asnumpy() if isinstance(a, nd.NDArray) else np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits(eager, jitted):
    assert len(eager) == len(jitted)
    for i, (e, j) in enumerate(zip(eager, jitted)):
        assert np.array_equal(bits(e), bits(j)), "array %d differs: max abs %g" % (
            i, np.abs(np.asarray(e.asnumpy() if isinstance(e, nd.NDArray) else e, np.float64)
                      - np.asarray(j.asnumpy() if isinstance(j, nd.NDArray) else j, np.float64)).max())


@pytest.fixture(autouse=True)
def fresh():
    old = minpy_jit.config()
    minpy_jit.clear_cache()
    minpy_jit.config(recompile_limit=BIG, backward_in_graph=True)
    yield
    minpy_jit.config(recompile_limit=old["recompile_limit"], backward_in_graph=old["backward_in_graph"],
                     whole_step=old["whole_step"])


def launches(whole_step, steps):
    """Graphs a training loop of `steps` steps runs: one a step with whole_step (the first step
    runs its forward and backward at backward() and the update at scope exit, so that an error
    building the gradient is raised by backward() as eagerly), else two a step."""
    return (steps + 1) if whole_step else 2 * steps


def both(run):
    """run(use_jit) -> list of arrays; eager then jit; returns (eager, jitted, stats delta)."""
    eager = [a.copy() if isinstance(a, nd.NDArray) else a for a in run(False)]
    before = minpy_jit.stats()
    jitted = run(True)
    after = minpy_jit.stats()
    delta = {k: after[k] - before[k] for k in ("backward_in_graph", "backward_by_mxnet", "executions",
                                                 "eager_replays", "independent_parts")}
    # Trainer updates, and flushed traces that were one update, launched directly (update_launch.h):
    # one engine operation each, not a graph
    delta["direct"] = (after["trainer_updates"]["direct"] - before["trainer_updates"]["direct"]
                       + after["update_flushes_direct"] - before["update_flushes_direct"])
    return eager, jitted, delta


def rand(shape, seed):
    return nd.array(np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32))


# ------------------------------------------------------------------ training steps

def _mlp(dropout=0.0, bn=False):
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation="relu", in_units=20))
    if bn:
        net.add(nn.BatchNorm(in_channels=32))
    if dropout:
        net.add(nn.Dropout(dropout))
    net.add(nn.Dense(16, activation="relu", in_units=32), nn.Dense(4, in_units=16))
    return net


@pytest.mark.parametrize("opt,kw,extra", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}, {}),
                                          ("adam", {"learning_rate": 0.01}, {}),
                                          ("sgd", {"learning_rate": 0.1}, {"dropout": 0.3, "bn": True})],
                         ids=["momentum", "adam", "dropout-batchnorm"])
@pytest.mark.parametrize("whole_step", [True, False], ids=["one-launch", "two-launches"])
def test_gluon_trainer_50_steps_launches_per_step(opt, kw, extra, whole_step):
    steps = 50
    minpy_jit.config(whole_step=whole_step)

    def run(use_jit):
        mx.random.seed(3)
        net = _mlp(**extra)
        net.initialize(mx.init.Xavier())
        x, y = rand((8, 20), 1), nd.array(np.arange(8) % 4)
        net(x)
        trainer = gluon.Trainer(net.collect_params(), opt, kw)
        lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        losses = []
        for _ in range(steps):
            with jit_or_eager(use_jit):
                with autograd.record():
                    loss = lossfn(net(x), y)
                loss.backward()
                trainer.step(8)
            losses.append(loss)
        params = list(net.collect_params().values())
        return losses + [p.data() for p in params] + [p.grad() for p in params if p.grad_req != "null"]

    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    assert st["backward_in_graph"] == steps and st["backward_by_mxnet"] == 0, st
    # (the first step may also make the optimizer's states in a graph of their own)
    assert launches(whole_step, steps) <= st["executions"] + st["direct"] <= launches(whole_step, steps) + 1, st
    assert st["eager_replays"] == 0, st


@pytest.mark.parametrize("whole_step", [True, False], ids=["one-launch", "two-launches"])
def test_ndarray_form_sgd_update_per_weight_50_steps(whole_step):
    """nd ops, autograd, sgd_update per weight reading w.grad: one launch a step (reading
    .grad, a new handle on the gradient buffer each time, does not cut the trace)."""
    steps = 50
    minpy_jit.config(whole_step=whole_step)

    def run(use_jit):
        rs = np.random.RandomState(4)
        ws = [nd.array(rs.uniform(-.3, .3, s).astype(np.float32)) for s in [(16, 20), (16,), (4, 16), (4,)]]
        for w in ws:
            w.attach_grad()
        x, y = rand((8, 20), 5), nd.array(np.arange(8) % 4)
        losses = []
        for _ in range(steps):
            with jit_or_eager(use_jit):
                with autograd.record():
                    h = nd.relu(nd.FullyConnected(x, ws[0], ws[1], num_hidden=16))
                    out = nd.FullyConnected(h, ws[2], ws[3], num_hidden=4)
                    loss = nd.mean(-nd.pick(nd.log_softmax(out), y))
                loss.backward()
                for w in ws:
                    nd.sgd_update(w, w.grad, lr=0.1, out=w)
            losses.append(loss)
        return losses + ws + [w.grad for w in ws]

    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    assert st["backward_in_graph"] == steps and st["executions"] + st["direct"] == launches(whole_step, steps), st


# ------------------------------------------------------------------ forms that run inside the graph

def _x_used_twice(x, w):
    return nd.sum(nd.relu(x * w) * x)


def _fused_chain(x, w):
    return nd.sum(nd.relu(x * w + 0.5) * 2 - w)


def _dropped_independent_result(x, w):
    nd.sum(nd.relu(w) * 3)  # a computation sharing nothing with the loss, its result dropped
    return nd.sum(x * w)


LABELS = nd.array([0, 1, 2, 0])


def _pick_and_softmax(x, w):
    return -nd.mean(nd.pick(nd.log_softmax(nd.dot(x, w)), LABELS, axis=-1))


GRAPH_FORMS = {"value read twice": _x_used_twice, "fused elementwise chain": _fused_chain,
               "pick + log_softmax": _pick_and_softmax,
               "dropped independent result": _dropped_independent_result}


@pytest.mark.parametrize("name", sorted(GRAPH_FORMS))
def test_forms_backward_in_graph_bit_exact(name):
    f = GRAPH_FORMS[name]

    def run(use_jit):
        x, w = rand((4, 3), 6), rand((4, 3) if name != "pick + log_softmax" else (3, 3), 7)
        x.attach_grad()
        w.attach_grad()
        with jit_or_eager(use_jit):
            with autograd.record():
                loss = f(x, w)
            loss.backward()
        return [loss, x.grad, w.grad]

    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    # one graph without autograd: not split into parts recorded under it (parts.cc)
    assert st["backward_in_graph"] == 1 and st["backward_by_mxnet"] == 0 and st["independent_parts"] == 0, st


def test_head_gradient_and_two_heads_in_graph():
    def run(use_jit):
        x = rand((5, 3), 8)
        x.attach_grad()
        hg = rand((5, 3), 9)
        out = []
        with jit_or_eager(use_jit):
            with autograd.record():
                y = nd.relu(x) * 3 - x
            y.backward(hg)
            out.append(x.grad.copy())
            with autograd.record():
                a = nd.sum(x * 2)
                b = nd.sum(nd.relu(x))
            autograd.backward([a, b])
            out.append(x.grad.copy())
        return out + [y, a, b]

    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    assert st["backward_in_graph"] == 2 and st["backward_by_mxnet"] == 0, st


def test_frozen_parameters_get_no_gradient():
    """A parameter with grad_req='null' is a constant: its gradient buffer keeps its value."""
    def run(use_jit):
        mx.random.seed(5)
        net = _mlp()
        net.initialize()
        net(rand((4, 20), 1))
        for p in net[0].collect_params().values():
            p.grad_req = "null"
        with jit_or_eager(use_jit):
            with autograd.record():
                loss = nd.sum(net(rand((4, 20), 2)))
            loss.backward()
        return [loss] + [p.grad() for p in net.collect_params().values() if p.grad_req != "null"]

    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    assert st["backward_in_graph"] == 1, st


# ------------------------------------------------------------------ forms left to MXNet's autograd

def _retain_graph(x, w):
    with autograd.record():
        y = nd.sum(nd.relu(x * w))
    y.backward(retain_graph=True)
    first = x.grad.copy()
    y.backward()
    return [first, x.grad, w.grad]


def _grad_req_add(x, w):
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            y = nd.sum(nd.relu(x * w))
        y.backward()
    return [x.grad, w.grad]


def _read_three_times(x, w):
    with autograd.record():
        y = nd.sum(x * w + x * x)  # x: three reads (x*w, and twice in x*x)
    y.backward()
    return [x.grad, w.grad]


def _input_with_history(x, w):
    with autograd.record():
        h = nd.relu(x * w)
        minpy_jit.flush()  # runs h's segment under autograd: h now has history (a read would keep it open)
        y = nd.sum(h * 2)
    y.backward()
    return [x.grad, w.grad]


def _second_loss_kept(x, w):
    with autograd.record():
        y1 = nd.sum(x * w)
        y2 = nd.sum(nd.relu(w) * 3)  # another graph, kept for a later look (its history too)
    y1.backward()
    return [w.grad, x.grad, y2]


def _split_outputs(x, w):
    # an op with several results: CachedOp's gradient pass over the combined graph crashed
    # inside MXNet (tests/stress/fuzz.py seed 50181)
    with autograd.record():
        parts = nd.split(x * w, num_outputs=3, axis=1)
        y = nd.sum(parts[0] * 2 + parts[1])
    y.backward()
    return [y, x.grad, w.grad]


# elemwise_add passes its head gradient through to both inputs, with no node computing it. In
# a graph MXNet's autograd runs backward, an input read only by it took the storage type of
# its gradient from an array MXNet had not settled yet, and the static CachedOp's backward
# raised ('storage_type_num_unknown_nodes'; fuzz seeds 76271, 84395, 203954, 213957, 400462,
# 402868) where eager runs.
def _add_of_variable_and_its_held_result(x, w):
    with autograd.record():
        s = nd.sin(x)  # held: its own part, read by the next one with its history
        y = nd.elemwise_add(x, s)
    y.backward(retain_graph=True)
    return [y, x.grad]


def _add_of_two_results_with_history(x, w):
    with autograd.record():
        h = nd.relu(x * w)
        h.wait_to_read()
        g = nd.sin(w)
        g.wait_to_read()
        y = nd.elemwise_add(h, g)
    y.backward()
    return [y, x.grad, w.grad]


def _add_then_autograd_grad(x, w):
    with autograd.record():
        s = nd.sin(x)
        y = nd.elemwise_add(x, s)
    return [y] + autograd.grad(y, [x])


MXNET_FORMS = {"split outputs": _split_outputs,
               "elemwise_add of a variable and its held result": _add_of_variable_and_its_held_result,
               "elemwise_add of two results with history": _add_of_two_results_with_history,
               "elemwise_add then autograd.grad": _add_then_autograd_grad, "retain_graph": _retain_graph, "grad_req add": _grad_req_add, "value read three times":
               _read_three_times, "input with history": _input_with_history,
               "second loss kept": _second_loss_kept}


@pytest.mark.parametrize("name", sorted(MXNET_FORMS))
def test_forms_left_to_mxnet_autograd(name):
    f = MXNET_FORMS[name]

    def run(use_jit):
        x, w = rand((4, 3), 10), rand((4, 3), 11)
        x.attach_grad()
        w.attach_grad()
        with jit_or_eager(use_jit):
            return f(x, w)

    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    assert st["backward_by_mxnet"] >= 1, st


def test_second_backward_without_retain_graph_raises_like_eager():
    def run(use_jit):
        x = rand((3,), 12)
        x.attach_grad()
        errors = []
        with jit_or_eager(use_jit):
            with autograd.record():
                y = nd.sum(x * x)
            y.backward()
            try:
                y.backward()
            except mx.base.MXNetError:
                errors.append("MXNetError")
        return [x.grad, np.array(len(errors))]

    eager, jitted, st = both(run)
    assert int(eager[1]) == 1
    assert_bits(eager, jitted)


def test_switched_off_gives_the_autograd_path():
    def run(use_jit):
        x, w = rand((4, 3), 13), rand((4, 3), 14)
        x.attach_grad()
        w.attach_grad()
        with jit_or_eager(use_jit):
            with autograd.record():
                y = _fused_chain(x, w)
            y.backward()
        return [y, x.grad, w.grad]

    minpy_jit.config(backward_in_graph=False)
    eager, jitted, st = both(run)
    assert_bits(eager, jitted)
    assert st["backward_in_graph"] == 0 and st["backward_by_mxnet"] == 1, st


def test_graph_printout_names_the_gradient():
    x = rand((4, 3), 15)
    x.attach_grad()
    with minpy_jit.jit():
        with autograd.record():
            y = nd.sum(nd.relu(x) * 2)
        y.backward()
    ir = minpy_jit.last_graph()
    assert "_minpy_backward(" in ir and "MXNet's gradient pass" in ir, ir


LEGACY_CASES = {  # MXNet legacy operators (OperatorProperty) on an input they accept
    "SwapAxis": lambda x: nd.SwapAxis(x, dim1=0, dim2=1),
    "SequenceMask": lambda x: nd.SequenceMask(x, nd.array([1, 2, 3]), use_sequence_length=True),
    "InstanceNorm": lambda x: nd.InstanceNorm(x, nd.ones((3,)), nd.zeros((3,))),
    "L2Normalization": lambda x: nd.L2Normalization(x),
    "Pad": lambda x: nd.Pad(x.reshape((1, 1, 3, 3)), mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)),
    "Crop": lambda x: nd.Crop(x.reshape((1, 1, 3, 3)), h_w=(2, 2), num_args=1),
}


@pytest.mark.parametrize("name", sorted(LEGACY_CASES))
def test_legacy_operator_backward_is_left_to_mxnet(name):
    """CachedOp's gradient pass over a graph holding a legacy operator and our backward of it
    segfaulted inside MXNet (fuzz seeds 80699, 204924: SwapAxis of a variable, then backward()).
    Such a backward is left to MXNet's autograd, counted; gradients equal eager's bit for bit."""
    def run(use_jit):
        x = rand((3, 3), 8 if name == "SequenceMask" else 9)
        if name == "SequenceMask" or name == "InstanceNorm":
            x = x.reshape((3, 3, 1)) if name == "SequenceMask" else x.reshape((1, 3, 3))
        x.attach_grad()
        with jit_or_eager(use_jit):
            with autograd.record():
                y = LEGACY_CASES[name](x) * 2
            y.backward()
        return [y, x.grad]

    eager, jitted, delta = both(run)
    assert_bits(eager, jitted)
    assert delta["backward_by_mxnet"] == 1 and delta["backward_in_graph"] == 0, delta


def _mlp_steps(scope, steps, lr_of, wd_of, rescale_of):
    """A small MLP in the NDArray form, `steps` steps, sgd_update per weight after backward()."""
    rs = np.random.RandomState(21)
    ws = [nd.array(rs.uniform(-0.3, 0.3, s).astype(np.float32)) for s in ((16, 12), (16,), (4, 16), (4,))]
    for w in ws:
        w.attach_grad()
    data = nd.array(rs.uniform(-1, 1, (8, 12)).astype(np.float32))
    label = nd.array(rs.randint(0, 4, (8,)).astype(np.float32))
    losses = []
    for s in range(steps):
        with scope():
            with autograd.record():
                h = nd.relu(nd.FullyConnected(data, ws[0], ws[1], num_hidden=16))
                loss = nd.mean(-nd.pick(nd.log_softmax(nd.FullyConnected(h, ws[2], ws[3], num_hidden=4)), label))
            loss.backward()
            for w in ws:
                nd.sgd_update(w, w.grad, lr=lr_of(s), wd=wd_of(s), rescale_grad=rescale_of(s), out=w)
        losses.append(loss.asnumpy())
    return [w.asnumpy() for w in ws] + losses


@pytest.mark.parametrize("changing", ["lr", "wd and rescale_grad"])
def test_update_after_backward_with_a_schedule(changing):
    """The update in backward()'s graph with a hyper-parameter changing every step, 50 steps,
    bit for bit. A changing lr, wd or rescale_grad becomes a graph input (README, "Scalars"):
    a few compiles, not fifty (before the lift, wd and rescale_grad compiled a graph a step:
    51 misses in 50 steps)."""
    lr = (lambda s: 0.1 * 0.97 ** s) if changing == "lr" else (lambda s: 0.1)
    wd = (lambda s: 1e-4 * (1 + s)) if changing != "lr" else (lambda s: 0.0)
    rescale = (lambda s: 1.0 / (1 + s)) if changing != "lr" else (lambda s: 1.0)
    eager = _mlp_steps(contextlib.nullcontext, 50, lr, wd, rescale)
    minpy_jit.clear_cache()
    before = minpy_jit.stats()
    jitted = _mlp_steps(minpy_jit.jit, 50, lr, wd, rescale)
    after = minpy_jit.stats()
    for a, b in zip(eager, jitted):
        assert np.array_equal(a, b)
    misses = after["cache_misses"] - before["cache_misses"]
    eager_ops = sum(after["fallbacks"].values()) - sum(before["fallbacks"].values())
    assert misses <= 3 and eager_ops == 0, after


@pytest.mark.parametrize("clip", [False, True], ids=["step", "clip-global-norm"])
def test_embedding_model_trains_as_eager(clip):
    # Embedding's backward kernel refuses a request for its data's gradient, which our graph
    # would compute (an unread gradient is kNullOp only in MXNet's own backward): every Gluon
    # Embedding model's backward() under jit() raised. MXNet's autograd runs it instead.
    def run(use_jit):
        mx.random.seed(4)
        net = nn.Sequential()
        net.add(nn.Embedding(30, 8), nn.Flatten(), nn.Dense(5))
        net.initialize(mx.init.Uniform(0.1))
        x = nd.array(np.random.RandomState(0).randint(0, 30, (6, 4)))
        y = nd.array(np.arange(6) % 5)
        net(x)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2, "momentum": 0.9})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        out = []
        for _ in range(4):
            with jit_or_eager(use_jit):
                with autograd.record():
                    loss = loss_fn(net(x), y)
                loss.backward()
                if clip:
                    gluon.utils.clip_global_norm([p.grad() for p in net.collect_params().values()], 0.5)
                trainer.step(6)
                out.append(loss.copy())
        return out + [p.data() for p in net.collect_params().values()]

    eager, jitted, delta = both(run)
    assert_bits(eager, jitted)
    assert delta["backward_in_graph"] == 0 and delta["backward_by_mxnet"] == 4
