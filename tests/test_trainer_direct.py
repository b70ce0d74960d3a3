"""Trainer updates launched directly (cpp/src/update_launch.h): when nothing is recorded before
Trainer.step under jit(), its update is pushed to MXNet's engine as one operation running our
multi-tensor kernel, instead of a recorded node run as a one-node graph. Weights, optimizer states
and MXNet's Python counters must equal eager's bit for bit, and later reads in the same scope must
see the updated weights; stats()['trainer_updates']['direct'] counts the direct launches.
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import minpy_jit
from conftest import jit_or_eager
from test_optimizers import assert_bits
from test_trainer_batched import counters, flat_states


@pytest.fixture(autouse=True)
def _many_graphs():
    old = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=10 ** 9)
    yield
    minpy_jit.config(recompile_limit=old)


def direct():
    return minpy_jit.stats()["trainer_updates"]["direct"]


def preset_run(use_jit, opt, kw, steps, dtype=np.float32, read_back=False, seed=2):
    """W5's form: gradients set outside jit() (what an earlier backward left), then
    Trainer.step(2) inside; the learning rate changes halfway. With read_back, the same scope
    then reads every weight (a recorded op after the launched update)."""
    rs = np.random.RandomState(seed)
    params = gluon.ParameterDict("d_")
    shapes = [(5, 3), (7,), (4, 4, 2), (1,), (33,)]  # odd sizes: the kernels' remainder loops
    for i, shape in enumerate(shapes):
        p = params.get("p%d" % i, shape=shape, dtype=dtype)
        p.initialize(mx.init.Constant(0))
        p.set_data(nd.array(rs.randn(*shape), dtype=dtype))
    params.get("p1").lr_mult = 2.0
    params.get("p2").wd_mult = 0.5
    trainer = gluon.Trainer(params, opt, dict(kw))
    sums = []
    for i in range(steps):
        for p in params.values():
            p.grad()[:] = nd.array(rs.randn(*p.shape), dtype=dtype)
            p.data()._fresh_grad = True
        if i == steps // 2:
            trainer.set_learning_rate(trainer.learning_rate * 0.5)
        with jit_or_eager(use_jit):
            trainer.step(2)
            if read_back:
                sums.append([(p.data() * 3).sum() for p in params.values()])
        if i == 0:
            nd.waitall()  # the states the first step made are allocated when their graph has run
    nd.waitall()
    return trainer, [p.data() for p in params.values()], sums


CASES = [
    ("sgd", dict(learning_rate=0.1)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=1e-3, clip_gradient=0.5)),
    ("nag", dict(learning_rate=0.05, momentum=0.9, wd=1e-3)),
    ("adam", dict(learning_rate=0.01, wd=1e-3, beta1=0.8)),
    ("rmsprop", dict(learning_rate=0.01, clip_weights=0.5)),
    ("rmsprop", dict(learning_rate=0.01, centered=True, wd=1e-3)),
    ("adagrad", dict(learning_rate=0.1, wd=1e-3, clip_gradient=0.5)),
]


@pytest.mark.parametrize("opt,kw", CASES, ids=["%s-%s" % (o, "-".join(sorted(k))) for o, k in CASES])
def test_launched_directly_bit_exact(opt, kw):
    steps = 12
    t_e, w_e, _ = preset_run(False, opt, kw, steps)
    before = direct()
    t_j, w_j, _ = preset_run(True, opt, kw, steps)
    # the first step creates the states (recorded ops): that update is recorded after them
    stateless = opt in ("sgd", "nag") and not kw.get("momentum")
    assert direct() - before == (steps if stateless else steps - 1)
    assert_bits(w_e, w_j, "weight")
    assert_bits(flat_states(t_e), flat_states(t_j), "state")
    assert counters(t_e) == counters(t_j)


@pytest.mark.parametrize("opt,momentum", [("sgd", 0.9), ("nag", 0.0)])
def test_multi_precision_launched_directly(opt, momentum):
    kw = dict(learning_rate=0.1, momentum=momentum, wd=1e-3, multi_precision=True)
    t_e, w_e, _ = preset_run(False, opt, kw, 8, dtype=np.float16)
    before = direct()
    t_j, w_j, _ = preset_run(True, opt, kw, 8, dtype=np.float16)
    assert direct() - before == 7  # float16 weights always have a state: the master copy
    assert_bits(w_e, w_j, "weight")
    assert_bits(flat_states(t_e), flat_states(t_j), "state and master copy")


def test_config_direct_updates_off_records_them():
    kw = dict(learning_rate=0.01)
    t_e, w_e, _ = preset_run(False, "adam", kw, 6)
    minpy_jit.config(direct_updates=False)
    try:
        before = minpy_jit.stats()["trainer_updates"]
        t_j, w_j, _ = preset_run(True, "adam", kw, 6)
        after = minpy_jit.stats()["trainer_updates"]
    finally:
        minpy_jit.config(direct_updates=True)
    assert after["direct"] == before["direct"] and after["batched"] - before["batched"] == 6
    assert_bits(w_e, w_j, "weight")
    assert_bits(flat_states(t_e), flat_states(t_j), "state")


def test_reads_after_the_update_in_the_same_scope_see_it():
    kw = dict(learning_rate=0.1, momentum=0.9)
    _, w_e, s_e = preset_run(False, "sgd", kw, 6, read_back=True)
    before = direct()
    _, w_j, s_j = preset_run(True, "sgd", kw, 6, read_back=True)
    assert direct() - before == 5
    assert_bits(w_e, w_j, "weight")
    for a, b in zip(s_e, s_j):
        assert_bits(a, b, "sum read after the step")


def test_recorded_gradient_writes_keep_the_update_recorded():
    """Gradients written inside the scope are pending recorded work: the update must run after
    it, so it is recorded into the same trace (not launched directly)."""
    def run(use_jit):
        rs = np.random.RandomState(0)
        params = gluon.ParameterDict("r_")
        for i in range(3):
            p = params.get("p%d" % i, shape=(4, 3))
            p.initialize(mx.init.Constant(0))
            p.set_data(nd.array(rs.randn(4, 3)))
        trainer = gluon.Trainer(params, "sgd", dict(learning_rate=0.1, momentum=0.9))
        grads = [nd.array(rs.randn(4, 3)) for _ in range(3)]
        for _ in range(4):
            with jit_or_eager(use_jit):
                for p, g in zip(params.values(), grads):
                    p.grad()[:] = g * 2
                    p.data()._fresh_grad = True
                trainer.step(1)
        nd.waitall()
        return [p.data() for p in params.values()]

    eager = run(False)
    before = minpy_jit.stats()["trainer_updates"]
    jitted = run(True)
    after = minpy_jit.stats()["trainer_updates"]
    assert after["direct"] == before["direct"]
    assert after["batched"] - before["batched"] == 4
    assert_bits(eager, jitted, "weight")


def cnn_run(use_jit, steps=6):
    """A convolution net after an inference pass (oneDNN reorders its weights into a blocked
    layout in place), trained with backward() as its own graph, so each update is launched with
    nothing recorded before it: the kernel must read weights and gradients in the default layout."""
    mx.random.seed(7)
    net = nn.HybridSequential(prefix="c_")
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, in_channels=3, activation="relu"), nn.Conv2D(4, 3, in_channels=8), nn.Flatten(),
                nn.Dense(5, in_units=4 * 6 * 6))
    net.initialize(mx.init.Xavier())
    rs = np.random.RandomState(1)
    x = nd.array(rs.randn(2, 3, 10, 10))
    net(x).wait_to_read()  # inference: weights reordered in place
    trainer = gluon.Trainer(net.collect_params(), "sgd", dict(learning_rate=0.05, momentum=0.9))
    for i in range(steps):
        with jit_or_eager(use_jit):
            with autograd.record():
                loss = (net(x) ** 2).mean()
            loss.backward()
            trainer.step(2)
        if i == 2:
            net(x).wait_to_read()  # another inference pass mid-training
        nd.waitall()  # the arrays a graph made are allocated when it has run: then launched directly
    nd.waitall()
    return trainer, [p.data() for p in net.collect_params().values()]


def test_convolution_weights_after_inference_passes():
    t_e, w_e = cnn_run(False)
    old = minpy_jit.config()["whole_step"]
    minpy_jit.config(whole_step=False)
    try:
        before = direct()
        t_j, w_j = cnn_run(True)
        launched = direct() - before
    finally:
        minpy_jit.config(whole_step=old)
    assert launched == 5  # every step but the first (it creates the momentum states)
    assert_bits(w_e, w_j, "weight")
    assert_bits(flat_states(t_e), flat_states(t_j), "state")
