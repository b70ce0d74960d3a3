"""@minpy_jit.function training steps against the same steps run eagerly, on random Gluon setups.

Each program builds a random network (Dense layers with random widths and activations, maybe
Dropout or BatchNorm), a loss (softmax cross-entropy, L2, L1, sigmoid binary cross-entropy), an
optimizer among those a fragment's Trainer.step covers and some it does not (Adam), random
hyper-parameters and grad_req ('add' with zero_grad() after each step among them), and runs a few
steps of

    with autograd.record():
        loss = loss_fn(net(x), y).mean()
    loss.backward()
    trainer.step(batch)

eagerly and as one decorated function on twin networks, with the batch changing shape or the
input becoming a variable, or the learning rate set anew, on some steps. After every step the losses, weights, gradients,
fresh-gradient flags and optimizer states must be equal bit for bit. Not collected by pytest.

    PYTHONPATH=. .venv/bin/python tests/stress/step_fuzz.py --programs 2000 --start 0
"""
import argparse
import os
import random
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

import minpy_jit  # noqa: E402
from conftest import assert_same  # noqa: E402

OPTIMIZERS = [("sgd", {"learning_rate": 0.1}), ("sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-3}),
              ("nag", {"learning_rate": 0.05, "momentum": 0.8}), ("signum", {"learning_rate": 0.01, "momentum": 0.9}),
              ("rmsprop", {"learning_rate": 0.01}), ("rmsprop", {"learning_rate": 0.01, "centered": True}),
              ("adagrad", {"learning_rate": 0.05}), ("adadelta", {}), ("ftrl", {"learning_rate": 0.1}),
              ("adam", {"learning_rate": 0.01}), ("sgd", {"learning_rate": 0.1, "clip_gradient": 0.05})]


def step(net, trainer, loss_fn, x, y, batch):
    with autograd.record():
        loss = loss_fn(net(x), y).mean()
    loss.backward()
    trainer.step(batch)
    return loss


def setup(r, seed):
    """A random (network factory, loss, optimizer, data schedule) for one program."""
    widths = [r.choice([3, 8, 17])] + [r.choice([4, 9, 16, 33]) for _ in range(r.randint(1, 3))]
    outs = r.choice([2, 5])
    acts = [r.choice([None, "relu", "tanh", "sigmoid"]) for _ in widths[1:]]
    extra = r.choice([None, None, "dropout", "batchnorm"])
    loss_kind = r.choice(["softmax", "l2", "l1", "sigmoid_bce"])
    opt, params = r.choice(OPTIMIZERS)
    grad_req = r.choice(["write"] * 5 + ["null_first", "add_all"])

    def make_net():
        mx.random.seed(seed)
        net = nn.HybridSequential()
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            net.add(nn.Dense(b, in_units=a, activation=acts[i]))
            if i == 0 and extra == "dropout":
                net.add(nn.Dropout(0.3))
            if i == 0 and extra == "batchnorm":
                net.add(nn.BatchNorm(in_channels=b))
        net.add(nn.Dense(outs, in_units=widths[-1]))
        net.initialize(mx.init.Xavier())
        if grad_req == "null_first":
            list(net.collect_params().values())[0].grad_req = "null"
        elif grad_req == "add_all":  # gradient accumulation: zeroed after each step
            net.collect_params().setattr("grad_req", "add")
        return net, gluon.Trainer(net.collect_params(), opt, dict(params))

    loss_fn = {"softmax": gluon.loss.SoftmaxCrossEntropyLoss(), "l2": gluon.loss.L2Loss(), "l1": gluon.loss.L1Loss(),
               "sigmoid_bce": gluon.loss.SigmoidBinaryCrossEntropyLoss()}[loss_kind]
    rows = [r.choice([4, 6]) for _ in range(r.randint(3, 6))]
    attach_at = r.choice([None, None, 2])
    lr_at = r.choice([None, None, 1, 3])  # trainer.set_learning_rate before that step
    desc = "widths %s acts %s extra %s loss %s opt %s %s grad_req %s rows %s attach_at %s lr_at %s" % (
        widths, acts, extra, loss_kind, opt, params, grad_req, rows, attach_at, lr_at)
    return make_net, loss_fn, loss_kind, outs, widths[0], rows, attach_at, lr_at, grad_req, desc


def data(rng, rows, width, outs, loss_kind):
    x = rng.uniform(-1, 1, (rows, width)).astype(np.float32)
    if loss_kind == "softmax":
        y = rng.randint(0, outs, rows).astype(np.float32)
    elif loss_kind == "sigmoid_bce":
        y = rng.randint(0, 2, (rows, outs)).astype(np.float32)
    else:
        y = rng.uniform(-1, 1, (rows, outs)).astype(np.float32)
    return x, y


def compare(eager, function):
    (ne, te), (nf, tf) = eager, function
    for pe, pf in zip(ne.collect_params().values(), nf.collect_params().values()):
        assert_same(pe.data(), pf.data())
        if pe.grad_req != "null":
            assert_same(pe.grad(), pf.grad())
            assert pe.data()._fresh_grad == pf.data()._fresh_grad, "fresh flag of %s" % pe.name
    # The states by parameter: a Trainer orders its parameters by name, and the twins' names
    # differ (dense10_ sorts before dense9_), so their state indices need not agree.
    def by_param(net, trainer):
        order = {id(p): k for k, p in enumerate(net.collect_params().values())}
        return {order[id(trainer._params[i])]: st for i, st in trainer._updaters[0].states.items()}
    se, sf = by_param(ne, te), by_param(nf, tf)
    assert sorted(se) == sorted(sf), "optimizer states for %s (eager) vs %s" % (sorted(se), sorted(sf))
    for k in se:
        a, b = se[k], sf[k]
        assert_same(list(a) if isinstance(a, tuple) else a, list(b) if isinstance(b, tuple) else b)


def run_one(seed):
    r = random.Random(seed)
    make_net, loss_fn, loss_kind, outs, width, rows, attach_at, lr_at, grad_req, desc = setup(r, seed)
    eager, function = make_net(), make_net()
    fstep = minpy_jit.function(step)
    rng = np.random.RandomState(seed)
    try:
        for i, n in enumerate(rows):
            x, y = data(rng, n, width, outs, loss_kind)
            xe, ye, xf, yf = nd.array(x), nd.array(y), nd.array(x), nd.array(y)
            if attach_at is not None and i >= attach_at:
                xe.attach_grad()
                xf.attach_grad()
            if lr_at == i:
                for _, trainer in (eager, function):
                    trainer.set_learning_rate(trainer.learning_rate * 0.5)
            mx.random.seed(seed * 7 + i)  # Dropout's draws: the same in both
            le = step(*eager, loss_fn, xe, ye, n)
            mx.random.seed(seed * 7 + i)
            lf = fstep(*function, loss_fn, xf, yf, n)
            assert_same(le, lf)
            compare(eager, function)
            if attach_at is not None and i >= attach_at:
                assert_same(xe.grad, xf.grad)
            if grad_req == "add_all":
                for net, _ in (eager, function):
                    net.collect_params().zero_grad()
    except AssertionError as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        return "%s\n    step %d, %s (line %d)" % (desc, i, " ".join(str(e).split())[:400] or "assertion", where.lineno)
    except Exception as e:  # noqa: BLE001 - a crash of the comparison is a finding too
        return "%s\n    raised %s" % (desc, traceback.format_exc(limit=4)[-400:])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", type=int, default=500)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--fuse", choices=("on", "off"), default="on")
    args = ap.parse_args()
    minpy_jit.config(fuse=args.fuse == "on")
    bad = 0
    t0 = time.time()
    for k in range(args.programs):
        seed = args.start + k
        why = run_one(seed)
        if why:
            bad += 1
            print("MISMATCH seed %d: %s" % (seed, why), flush=True)
        if (k + 1) % 100 == 0:
            print("[%s] %d/%d programs, %d mismatches, %.1f programs/s" % (
                time.strftime("%H:%M:%S"), k + 1, args.programs, bad, (k + 1) / (time.time() - t0)), flush=True)
    print("%d programs (seeds %d-%d, fuse %s), %d mismatches" % (
        args.programs, args.start, args.start + args.programs - 1, args.fuse, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
