"""Train an MLP on scikit-learn's handwritten digits, eagerly, with minpy_jit.jit() and with
@minpy_jit.function.

The data set ships inside scikit-learn (sklearn.datasets.load_digits: 1797 8x8
images, 10 classes) -- nothing is downloaded. The three runs use the same initial
weights, the same batch order and the same optimizer (they alternate epoch by
epoch so all see the same machine load); the only difference is how the training
step (forward under autograd.record(), backward, trainer.step) is called: as is,
inside `with minpy_jit.jit():`, or decorated with `minpy_jit.function`.

    bash scripts/demo.sh                                  # sets everything up, then runs this
    .venv/bin/python examples/train_digits.py [--optimizer adam|sgd-momentum|sgd] [--epochs 10]
"""
import argparse
import json
import os
import statistics
import sys
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn
from sklearn.datasets import load_digits

import minpy_jit

SEED = 0
SIZES = (64, 128, 64, 10)


def load_data():
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.float32)
    order = np.random.RandomState(SEED).permutation(len(x))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def make_net():
    net = nn.HybridSequential()
    with net.name_scope():
        for i, (nin, nout) in enumerate(zip(SIZES[:-1], SIZES[1:])):
            last = i == len(SIZES) - 2
            net.add(nn.Dense(nout, in_units=nin, activation=None if last else "relu"))
    return net


def initial_weights():
    mx.random.seed(SEED)
    net = make_net()
    net.initialize(mx.init.Xavier())
    return [p.data().copy() for p in net.collect_params().values()]


def make_trainer(net, optimizer, lr):
    if optimizer == "adam":
        return gluon.Trainer(net.collect_params(), "adam", {"learning_rate": lr})
    if optimizer == "sgd-momentum":
        return gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr, "momentum": 0.9})
    return gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})


def accuracy(net, x, y):
    pred = net(nd.array(x)).argmax(axis=1).asnumpy()
    return float((pred == y).mean())


class Bar:
    """A plain-text progress bar on one \\r-updated line (one line per epoch when not a terminal)."""

    def __init__(self, label, total, width=30):
        self.label, self.total, self.width = label, total, width
        self.tty = sys.stdout.isatty()

    def update(self, epoch, epochs, step, loss, ms):
        if not self.tty and step < self.total:
            return
        done = int(self.width * step / self.total)
        line = "%-8s epoch %2d/%d [%s%s] %3d/%d  loss %.4f  %6.2f ms/step" % (
            self.label, epoch, epochs, "#" * done, "." * (self.width - done), step, self.total, loss, ms)
        sys.stdout.write("\r" + line if self.tty else line)
        sys.stdout.flush()

    def end(self, extra):
        sys.stdout.write("  " + extra + "\n")
        sys.stdout.flush()


def train_step(net, trainer, loss_fn, x, y):
    with autograd.record():
        loss = loss_fn(net(x), y).mean()
    loss.backward()
    trainer.step(1)
    return loss


compiled_step = minpy_jit.function(train_step)  # the same step, compiled from its source


class Run:
    """One training run (eager, jit or function): its own net, initialised from `init`, and Trainer."""

    def __init__(self, mode, data, init, args):
        self.mode, self.data, self.args = mode, data, args
        self.net = make_net()
        self.net.initialize()
        for p, w in zip(self.net.collect_params().values(), init):
            p.set_data(w)
        self.trainer = make_trainer(self.net, args.optimizer, args.lr)
        self.loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        self.starts = list(range(0, len(data[0]), args.batch_size))
        self.bar = Bar(mode, len(self.starts))
        self.step_ms = []
        self.loss = self.acc = None

    def _step(self, xb, yb):
        args = (self.net, self.trainer, self.loss_fn, xb, yb)
        if self.mode == "jit":
            with minpy_jit.jit():
                return train_step(*args)
        if self.mode == "function":
            return compiled_step(*args)
        return train_step(*args)

    def epoch(self, epoch):
        x_tr, y_tr, x_te, y_te = self.data
        order = np.random.RandomState(SEED + epoch).permutation(len(x_tr))  # same batches in both modes
        losses, ms = [], []
        for i, s in enumerate(self.starts, 1):
            idx = order[s:s + self.args.batch_size]
            xb, yb = nd.array(x_tr[idx]), nd.array(y_tr[idx])
            t0 = time.perf_counter()
            loss = self._step(xb, yb)
            losses.append(loss.asscalar())  # the step's result is ready (and the progress bar needs it)
            nd.waitall()                    # ... and so are the updated weights
            ms.append((time.perf_counter() - t0) * 1e3)
            self.bar.update(epoch, self.args.epochs, i, float(np.mean(losses)), statistics.median(ms))
        self.step_ms += ms
        self.loss = float(np.mean(losses))
        self.acc = accuracy(self.net, x_te, y_te)
        self.bar.end("test acc %.4f" % self.acc)

    def weights(self):
        return [p.data().asnumpy() for p in self.net.collect_params().values()]


def print_stats(s):
    print("minpy_jit.stats() for the jit() and @function runs:")
    print("  ops recorded      %d" % s["ops_recorded"])
    print("  cache hits/misses %d / %d   (graphs cached %d, evictions %d)"
          % (s["cache_hits"], s["cache_misses"], s["graphs_cached"], s["cache_evictions"]))
    print("  executions        %d compiled-graph runs, %d eager replays" % (s["executions"], s["eager_replays"]))
    print("  compile time      %.1f ms total" % s["compile_ms"])
    print("  our kernels       %d calls standing for %d recorded ops (fused elementwise chains, "
          "multi-tensor updates)" % (s["fused_kernels"], s["fused_ops"]))
    print("  flushes by cause  " + (", ".join("%s: %d" % kv for kv in sorted(s["flushes"].items(),
                                                                            key=lambda kv: -kv[1])) or "none"))
    print("  fallbacks (eager) " + (", ".join("%s: %d" % kv for kv in sorted(s["fallbacks"].items())) or "none"))
    for reason, k in sorted(s.get("fallback_reasons", {}).items()):
        print("      %dx %s" % (k, reason))
    for site, info in s.get("sites", {}).items():
        print("  site %-20s %d compiles%s" % (site, info["compiles"],
                                              ", now EAGER (recompile limit reached)" if info["eager"] else ""))
    print("  full dict: " + json.dumps(s, sort_keys=True))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--optimizer", choices=("adam", "sgd-momentum", "sgd"), default="adam")
    ap.add_argument("--lr", type=float, default=None, help="default: 0.001 for adam, 0.05 for sgd")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    if args.lr is None:
        args.lr = 0.001 if args.optimizer == "adam" else 0.05

    data = load_data()
    print("digits: %d train / %d test samples, MLP %s (ReLU), Trainer(%s, lr %g), %d epochs, batch %d"
          % (len(data[0]), len(data[2]), "-".join(map(str, SIZES)), args.optimizer, args.lr, args.epochs,
             args.batch_size))
    print("mxnet %s, OMP_NUM_THREADS=%s, MXNET_ENGINE_TYPE=%s, %s cores"
          % (mx.__version__, os.environ.get("OMP_NUM_THREADS", "(unset)"),
             os.environ.get("MXNET_ENGINE_TYPE", "(unset)"), os.cpu_count()))
    init = initial_weights()

    # The two runs alternate epoch by epoch, so that both see the same machine load
    # (the machines are shared and noisy); each run trains its own model from `init`.
    runs = {m: Run(m, data, init, args) for m in ("eager", "jit", "function")}
    minpy_jit.reset_stats()
    for epoch in range(1, args.epochs + 1):
        for run in runs.values():
            run.epoch(epoch)
    jit_stats = minpy_jit.stats()
    results = {m: dict(step_ms=r.step_ms, acc=r.acc, loss=r.loss, weights=r.weights()) for m, r in runs.items()}

    e, j, f = results["eager"], results["jit"], results["function"]
    warm = len(e["step_ms"]) // 10  # leave out the first 10% (warm-up, compiles) for the steady-state figure
    med = {m: statistics.median(r["step_ms"][warm:]) for m, r in results.items()}
    mean = {m: statistics.mean(r["step_ms"]) for m, r in results.items()}
    print()
    print("%-8s %14s %16s %10s %10s" % ("mode", "median ms/step", "mean ms/step", "final loss", "test acc"))
    for m in ("eager", "jit", "function"):
        print("%-8s %14.3f %16.3f %10.4f %10.4f" % (m, med[m], mean[m], results[m]["loss"], results[m]["acc"]))
    for m in ("jit", "function"):
        print("speedup (eager / %s): %.2fx median step (after the first %d steps), %.2fx overall"
              % (m, med["eager"] / med[m], warm, mean["eager"] / mean[m]))
    same = True
    for name, r in (("jit", j), ("function", f)):
        wdiff = max(float(np.abs(a - b).max()) for a, b in zip(e["weights"], r["weights"]))
        agree = abs(e["acc"] - r["acc"]) <= 0.02
        same = same and agree
        print("test accuracy eager %.4f vs %s %.4f (%s); max |weight difference| %.2e"
              % (e["acc"], name, r["acc"], "same within noise" if agree else "DIFFERENT", wdiff))
    print()
    print_stats(jit_stats)
    if not same:
        sys.exit("jit() or @function training disagrees with eager training")


if __name__ == "__main__":
    main()
