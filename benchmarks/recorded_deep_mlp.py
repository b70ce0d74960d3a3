"""A deep MLP step recorded under autograd.record() (more ops than segment_ops), backward(),
eager vs jit(): median CPU time (time.process_time) of a step, and the ratio, in this run.

    OMP_NUM_THREADS=1 MXNET_OMP_MAX_THREADS=1 .venv/bin/python benchmarks/recorded_deep_mlp.py [LAYERS]

LAYERS (default 40) of relu(dot(h, w) * 0.5 + 0.1), batch 64, width 128: 4 ops a layer. A
recorded trace is not cut into segments (README, `segment_ops`), so the step runs at backward().
"""
import contextlib
import statistics
import sys
import time

import numpy as np
from mxnet import autograd, nd

import minpy_jit


def main():
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    rs = np.random.RandomState(0)
    ws = [nd.array(rs.uniform(-0.1, 0.1, (128, 128)).astype(np.float32)) for _ in range(layers)]
    for w in ws:
        w.attach_grad()
    x = nd.array(rs.uniform(-1, 1, (64, 128)).astype(np.float32))

    def step(scope):
        with scope():
            t0 = time.process_time()
            with autograd.record():
                h = x
                for w in ws:
                    h = nd.relu(nd.dot(h, w) * 0.5 + 0.1)
                loss = (h * h).sum()
            loss.backward()
            ws[0].grad.wait_to_read()
            return time.process_time() - t0

    med = {}
    for name, scope in (("eager", contextlib.nullcontext), ("jit", minpy_jit.jit)):
        for _ in range(3):
            step(scope)
        med[name] = statistics.median(step(scope) for _ in range(15)) * 1e3
    s = minpy_jit.stats()
    print("layers=%d (%d recorded ops): eager %.2f ms, jit %.2f ms (eager/jit %.2fx); backward in graph %d, "
          "per-op autograd graphs %d" % (layers, 4 * layers + 1, med["eager"], med["jit"], med["eager"] / med["jit"],
                                         s["backward_in_graph"], s.get("per_op_autograd", 0)))


if __name__ == "__main__":
    main()
