"""Activation's sigmoid and tanh inside fused units (cpp/src/exact_activation.h,
cpp/kernels/onednn_eltwise.h).

MXNet's wheel runs Activation(act_type='sigmoid' | 'tanh') on float32 CPU data of 1-5 axes
through oneDNN, forward and backward (the backward from the activation's input). The fused
kernels' sigmoid_dnnl and tanh_dnnl instructions compute oneDNN's algorithms; the lowering uses
them only where its check against MXNet's operator passed (`_core.activation_instr`, asserted
here, so that a test cannot pass with the instruction silently unused). Every value and
gradient is compared with eager MXNet bit for bit.
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd

import minpy_jit
from minpy_jit import _core
from conftest import arr, assert_same, run_both, train_steps

F32 = np.float32
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-39, -1e-39, 9.0, -9.0, 9.0109,
                     -9.0109, 87.3, -87.3, 88.8, -88.8, 1e-4, -1e-4, 0.5], dtype=F32)


@pytest.fixture(autouse=True)
def fresh_cache():
    minpy_jit.clear_cache()


def programs(res):
    return [line for g in minpy_jit.graphs() for line in g["ir"].splitlines() if "program:" in line]


def special_data(shape, seed):
    """The special values (the saturation edges of both functions among them) paired with
    every special head gradient, then wide random values."""
    n = int(np.prod(shape))
    rs = np.random.RandomState(seed)
    x = np.concatenate([np.repeat(SPECIALS, len(SPECIALS)), rs.uniform(-12, 12, n).astype(F32)])[:n]
    g = np.concatenate([np.tile(SPECIALS, len(SPECIALS)), rs.standard_normal(n).astype(F32)])[:n]
    return x.reshape(shape), g.reshape(shape)


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
@pytest.mark.parametrize("shape", [(441,), (21, 21), (3, 7, 21), (2, 3, 7, 11), (2, 3, 2, 7, 11), (2, 3, 2, 7, 11, 2)])
def test_values_and_gradients_equal_eager(act, shape):
    """A unit with the activation in its middle, under record() with backward() in the scope:
    oneDNN's bits forward and backward on every pair of special values. 6 axes: MXNet runs its
    own kernel there, so the activation stays MXNet's op."""
    xv, gv = special_data(shape, 1)
    x, head = arr(xv), arr(gv)

    def fn(x, head):
        x.attach_grad()
        with autograd.record():
            y = nd.Activation(x * 1.0 + 0.0, act_type=act) * 2.0
        y.backward(head)
        return y, x.grad

    res = run_both(fn, x, head)
    assert_same(*res)
    instr = _core.activation_instr(act, shape, True)
    assert (instr is not None) == (len(shape) <= 5)
    fused_act = any((instr or "-") + " " in p for p in programs(res))
    assert fused_act == (instr is not None), programs(res)


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_forward_only_and_predict_mode(act):
    x = arr(special_data((33, 21), 2)[0])
    for train in (False, True):
        def fn(x):
            with autograd.record(train_mode=train):
                return nd.Activation(x - 0.5, act_type=act) * 3.0

        res = run_both(fn, x)
        assert_same(*res)
        assert any(_core.activation_instr(act, (33, 21), train) in p for p in programs(res))


def test_softrelu_stays_mxnets():
    x = arr(special_data((21, 21), 3)[0])
    res = run_both(lambda x: nd.Activation(x * 2.0, act_type="softrelu") + 1.0, x)
    assert_same(*res)
    assert _core.activation_instr("softrelu", (21, 21), False) is None


def lstm_cell():
    cell = gluon.rnn.LSTMCell(32, input_size=16)
    cell.initialize(mx.init.Xavier())
    return cell


def test_lstm_sequence_equals_eager_with_one_unit_a_step():
    """W4's shape of loop: a Gluon LSTMCell over 12 steps. The cell's last tanh (Activation) and
    the product after it join the gates' unit: one fused unit and one FullyConnected a step."""
    cell = lstm_cell()
    rs = np.random.RandomState(4)
    xs = [arr(rs.uniform(-1, 1, (8, 16)).astype(F32)) for _ in range(12)]
    h0, c0 = arr(np.zeros((8, 32), F32)), arr(np.zeros((8, 32), F32))

    def fn(xs, h, c):
        states = [h, c]
        for x in xs:
            _, states = cell(x, states)
        return states

    res = run_both(fn, xs, h0, c0)
    assert_same(*res)
    assert _core.activation_instr("tanh", (8, 32), False) == "tanh_dnnl"
    ir = "\n".join(g["ir"] for g in minpy_jit.graphs())
    assert "tanh_dnnl" in ir
    top_level = [line for line in ir.splitlines() if not line.lstrip().startswith("|")]
    assert not [line for line in top_level if "= Activation(" in line]  # every Activation is inside a unit


def test_lstm_training_steps_equal_eager():
    """An LSTMCell unrolled over 5 steps, a loss, backward() and Trainer.step, 4 times: losses,
    weights and gradients bit for bit (the fused units' backward reads the activations' inputs)."""
    rs = np.random.RandomState(5)
    xs = [arr(rs.uniform(-2, 2, (4, 16)).astype(F32)) for _ in range(5)]

    def train(xs):
        mx.random.seed(7)
        cell = lstm_cell()
        trainer = gluon.Trainer(cell.collect_params(), "sgd", {"learning_rate": 0.5})
        losses = []
        for _ in range(4):
            with autograd.record():
                states = cell.begin_state(batch_size=4)
                for x in xs:
                    out, states = cell(x, states)
                loss = (out * out).sum() + states[1].sum()
            loss.backward()
            trainer.step(4)
            losses.append(loss)
        return losses, [p.data() for p in cell.collect_params().values()], \
            [p.grad() for p in cell.collect_params().values()]

    res = run_both(train, xs)
    assert_same(*res)
    assert any("tanh_dnnl" in p for p in programs(res))


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_dense_activation_training_equals_eager(act):
    """Dense(activation=...) twice, softmax cross-entropy, Trainer: 5 steps bit for bit."""
    x = arr(np.random.RandomState(6).uniform(-3, 3, (16, 12)).astype(F32))
    y = arr((np.arange(16) % 4).astype(F32))

    def train(x, y):
        mx.random.seed(8)
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(20, in_units=12, activation=act), gluon.nn.Dense(4, in_units=20, activation=act))
        net.initialize(mx.init.Xavier())
        return train_steps(net, gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.3}), x, y, 5)

    assert_same(*run_both(train, x, y))
