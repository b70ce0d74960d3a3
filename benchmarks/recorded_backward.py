"""W2's chain recorded under autograd.record(), its forward flushed (`y.wait_to_read()`), then
`y.backward()` run by MXNet's autograd: the path on which a fused unit's forward saves the values
its backward reads (README, "Under autograd.record() a fused unit has a gradient").

Prints the median CPU time (time.process_time: every thread of the process, steadier than wall
time on a shared machine) of the forward and of the backward, eagerly and under jit(), and their
ratios, measured in this run:

    OMP_NUM_THREADS=1 MXNET_OMP_MAX_THREADS=1 .venv/bin/python benchmarks/recorded_backward.py [N] [REPEATS]

N: elements of x (default 1,000,000, W2's size); REPEATS: timed steps per system (default 9).
"""
import contextlib
import statistics
import sys
import time

import numpy as np
from mxnet import autograd, nd

import minpy_jit


def chain(x):
    for _ in range(10):  # W2: 50 ops
        x = nd.tanh(x * 0.9 + 0.1) * nd.sigmoid(x)
    return x


def step(scope, x):
    """(forward, backward) CPU seconds of one recorded step."""
    with scope():
        t0 = time.process_time()
        with autograd.record():
            y = chain(x)
        y.wait_to_read()
        t1 = time.process_time()
        y.backward()
        x.grad.wait_to_read()
        t2 = time.process_time()
    return t1 - t0, t2 - t1


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (n,)).astype(np.float32))
    x.attach_grad()
    med = {}
    for name, scope in (("eager", contextlib.nullcontext), ("jit", minpy_jit.jit)):
        for _ in range(3):
            step(scope, x)
        times = [step(scope, x) for _ in range(repeats)]
        med[name] = [statistics.median(t[k] for t in times) * 1e3 for k in (0, 1)]
    (ef, eb), (jf, jb) = med["eager"], med["jit"]
    print("n=%d  forward: eager %.2f ms, jit %.2f ms (eager/jit %.2fx)  backward: eager %.2f ms, jit %.2f ms "
          "(eager/jit %.2fx)  fused kernel calls %d" % (n, ef, jf, ef / jf, eb, jb, eb / jb,
                                                        minpy_jit.stats()["fused_kernels"]))


if __name__ == "__main__":
    main()
