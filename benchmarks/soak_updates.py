"""Soak check (not a timing): many Trainer steps under jit(), compared with eager after
every step, bit for bit. Targets the paths where a race or a wrong fused update would
show: momentum buffers created lazily in one flush and updated in the next, 200 small
parameters merged into one multi-tensor kernel call, and in-place writes checked for
views while the engine is still writing.

    .venv/bin/python benchmarks/soak_updates.py [steps]      # default 300
"""
import sys

import mxnet as mx
import numpy as np
from mxnet import gluon, nd

import minpy_jit

N_PARAMS, SHAPE = 200, (64, 64)


def make(seed):
    rng = np.random.RandomState(seed)
    params = gluon.ParameterDict("soak_")
    for i in range(N_PARAMS):
        p = params.get("p%d" % i, shape=SHAPE)
        p.initialize(mx.init.Constant(0))
        p.set_data(nd.array(rng.uniform(-1, 1, SHAPE).astype(np.float32)))
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4})
    return list(params.values()), trainer


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    eager_p, eager_t = make(0)
    jit_p, jit_t = make(0)
    rng = np.random.RandomState(1)
    for step in range(steps):
        grads = [rng.uniform(-1, 1, SHAPE).astype(np.float32) for _ in range(N_PARAMS)]
        for params, trainer, use_jit in ((eager_p, eager_t, False), (jit_p, jit_t, True)):
            for p, g in zip(params, grads):
                p.grad()[:] = nd.array(g)
                p.data()._fresh_grad = True
            if use_jit:
                with minpy_jit.jit():
                    trainer.step(1)
            else:
                trainer.step(1)
        for i, (a, b) in enumerate(zip(eager_p, jit_p)):
            if not np.array_equal(a.data().asnumpy(), b.data().asnumpy()):
                print("MISMATCH at step %d, parameter %d" % (step, i))
                sys.exit(1)
    st = minpy_jit.stats()
    print("%d steps x %d parameters: jit weights equal eager's bit for bit after every step" % (steps, N_PARAMS))
    print("fused kernel calls %d (standing for %d recorded ops), cache hits %d, misses %d, eager replays %d"
          % (st["fused_kernels"], st["fused_ops"], st["cache_hits"], st["cache_misses"], st["eager_replays"]))


if __name__ == "__main__":
    main()
