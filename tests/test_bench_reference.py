"""The benchmarks' float64 references (benchmarks/reference.py) and their checks.

Every system's benchmark result is checked against these references at float32 tolerances; these
tests make sure the check passes MXNet's eager results and catches results that are wrong by one
step, one op or one swapped gate, so a passing benchmark check means something.
"""
import os
import sys

import numpy as np
import pytest
from mxnet import autograd, gluon, nd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import reference as R  # noqa: E402


def w1_mx(reps):
    x = nd.array(R.w1_input())
    for _ in range(reps):
        x = nd.relu(x * R.W1["mul"] + R.W1["add"])
    return x.asnumpy()


def test_w1_eager_passes_and_one_op_less_fails():
    assert R.check("W1", w1_mx(R.W1["reps"]))["ok"]
    assert not R.check("W1", w1_mx(R.W1["reps"] - 1))["ok"]


def test_w2_eager_passes_and_a_changed_constant_fails():
    x = nd.array(R.w2_input())
    y = x
    for _ in range(R.W2["reps"]):
        y = nd.tanh(y * R.W2["mul"] + R.W2["add"]) * nd.sigmoid(y)
    assert R.check("W2", y.asnumpy())["ok"]
    z = R.w2_input().astype(np.float64)
    for _ in range(R.W2["reps"]):
        z = np.tanh(z * R.W2["mul"] + 0.1001) / (1 + np.exp(-z))
    c = R.check("W2", z.astype(np.float32))
    assert not c["ok"] and c["max_excess"] > 1


def test_w3_gluon_steps_pass_and_a_missing_step_fails():
    weights, biases, x, labels = R.w3_inputs()
    net = gluon.nn.HybridSequential()
    for i, w in enumerate(weights):
        net.add(gluon.nn.Dense(w.shape[0], in_units=w.shape[1], activation="relu" if i < 2 else None))
    net.initialize()
    for p, v in zip(net.collect_params().values(), [a for wb in zip(weights, biases) for a in wb]):
        p.set_data(nd.array(v))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": R.W3["lr"]})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    xs, ys = nd.array(x), nd.array(labels.astype(np.float32))
    losses = []
    for _ in range(R.CHECK_STEPS):
        with autograd.record():
            loss = loss_fn(net(xs), ys).mean()
        loss.backward()
        trainer.step(1)
        losses.append(loss.asscalar())
    p = [q.data().asnumpy() for q in net.collect_params().values()]
    assert R.check("W3", R.w3_result(losses, p[0::2], p[1::2]))["ok"]
    # the weights of one step fewer (and the losses of the right steps) must not pass
    _, w2, b2 = R.w3_reference(weights, biases, x, labels, steps=R.CHECK_STEPS - 1)
    assert not R.check("W3", R.w3_result(losses, [w.astype(np.float32) for w in w2],
                                         [b.astype(np.float32) for b in b2]))["ok"]


def test_w4_lstm_cell_passes_and_swapped_gates_fail():
    w_ih, w_hh, b_ih, b_hh, xs, h0, c0 = R.w4_inputs()
    cell = gluon.rnn.LSTMCell(R.W4["hidden"], input_size=R.W4["input"])
    cell.initialize()
    for suffix, v in (("i2h_weight", w_ih), ("h2h_weight", w_hh), ("i2h_bias", b_ih), ("h2h_bias", b_hh)):
        cell.collect_params()[cell.prefix + suffix].set_data(nd.array(v))
    states = [nd.array(h0), nd.array(c0)]
    for x in xs:
        _, states = cell(nd.array(x), states)
    assert R.check("W4", [s.asnumpy() for s in states])["ok"]
    H = R.W4["hidden"]
    swap = np.r_[0:2 * H, 3 * H:4 * H, 2 * H:3 * H]  # g and o exchanged
    wrong = R.w4_reference(w_ih[swap], w_hh[swap], b_ih[swap], b_hh[swap], xs, h0, c0)
    assert not R.check("W4", [w.astype(np.float32) for w in wrong])["ok"]


def test_w5_updates_pass_and_one_update_less_fails():
    ws, gs = R.w5_inputs()
    w = [nd.array(a) for a in ws[:8]]
    m = [nd.zeros(R.W5["shape"]) for _ in w]
    for _ in range(R.CHECK_STEPS):
        for wi, gi, mi in zip(w, gs, m):
            nd.sgd_mom_update(wi, nd.array(gi), mi, lr=R.W5["lr"], momentum=R.W5["momentum"], out=wi)
    ref = R.w5_reference(ws[:8], gs[:8])
    assert R.check("W5", [a.asnumpy() for a in w], ref)["ok"]
    fewer = R.w5_reference(ws[:8], gs[:8], steps=R.CHECK_STEPS - 1)
    assert not R.check("W5", [a.astype(np.float32) for a in fewer], ref)["ok"]


def test_w5_adam_trainer_steps_pass_and_the_momentum_reference_fails():
    """W5's form C (Trainer('adam')) against MXNet's Adam reference; the momentum reference,
    which form C was once checked against, fails it."""
    import mxnet as mx
    ws, gs = R.w5_inputs()
    params = gluon.ParameterDict("ref_adam_")
    for i, (w, g) in enumerate(zip(ws[:8], gs[:8])):
        p = params.get("p%d" % i, shape=R.W5["shape"])
        p.initialize(mx.init.Constant(0))
        p.set_data(nd.array(w))
        p.grad()[:] = nd.array(g)
    trainer = gluon.Trainer(params, "adam", {"learning_rate": 0.001})
    for _ in range(R.CHECK_STEPS):
        for p in params.values():
            p.data()._fresh_grad = True
        trainer.step(1)
    got = [p.data().asnumpy() for p in params.values()]
    assert R.check("W5", got, R.w5_adam_reference(ws[:8], gs[:8], lr=0.001))["ok"]
    fewer = R.w5_adam_reference(ws[:8], gs[:8], lr=0.001, steps=R.CHECK_STEPS - 1)
    assert not R.check("W5", [a.astype(np.float32) for a in fewer], R.w5_adam_reference(ws[:8], gs[:8], lr=0.001))["ok"]
    assert not R.check("W5", got, R.w5_reference(ws[:8], gs[:8]))["ok"]


@pytest.mark.parametrize("bad, why", [
    (lambda r: r[:-1], "arrays"),
    (lambda r: [r[0].T] + list(r[1:]), "shape"),
    (lambda r: [np.full_like(r[0], np.nan)] + list(r[1:]), "non-finite"),
])
def test_check_reports_structural_mismatches(bad, why):
    ref = [np.ones((2, 3)), np.zeros(4)]
    c = R.check("W4", bad(ref), ref)
    assert not c["ok"] and why in c["detail"]
    assert R.check_text(c).startswith("FAIL")


def test_mxnet_is_not_needed_by_reference():
    # the peers import reference.py in a venv without mxnet
    import ast
    with open(R.__file__) as f:
        tree = ast.parse(f.read())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module or "")])}
    assert imported == {"numpy"}, imported
