"""100 Adam steps with a per-step learning-rate schedule under jit(): how many compiles?

Adam's bias correction and the FactorScheduler change `lr` every step. The scalar
policy (cpp/src/rewrite.h) must turn that into one recompile, not one per step.
Prints hits/misses and the misses per step. Run: .venv/bin/python benchmarks/adam_schedule_recompiles.py
"""
import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd

import minpy_jit


def main(steps=100):
    mx.random.seed(0)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(10))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "adam",
                            {"lr_scheduler": mx.lr_scheduler.FactorScheduler(step=1, factor=0.99, base_lr=1e-3)})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    X, y = nd.random.uniform(shape=(64, 784)), nd.array(np.arange(64) % 10)
    misses, lrs = [], []
    for _ in range(steps):
        before = minpy_jit.stats()["cache_misses"]
        with minpy_jit.jit():
            with autograd.record():
                loss = loss_fn(net(X), y)
            loss.backward()
            trainer.step(64)
        misses.append(minpy_jit.stats()["cache_misses"] - before)
        lrs.append(trainer.learning_rate)
    s = minpy_jit.stats()
    print("%d Adam steps, FactorScheduler (%d distinct learning rates): cache hits %d, misses %d"
          % (steps, len(set(lrs)), s["cache_hits"], s["cache_misses"]))
    print("misses at step 0: %d (first sight of each segment: parameter init, forward+backward, state creation,"
          " update), step 1: %d (the changed lr becomes a graph input), steps 2-%d: %d"
          % (misses[0], misses[1], steps - 1, sum(misses[2:])))
    print("flushes by cause:", s["flushes"])


if __name__ == "__main__":
    main()
