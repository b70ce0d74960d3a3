"""minpy_jit fuzz reproducer: seed 301977, shrunk from 34 to 10 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed301977.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(301977)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a1.attach_grad()
    net3 = gluon.nn.HybridSequential()
    net3.add(gluon.nn.Dense(4, activation='tanh'), gluon.nn.Dense(3))
    net3.initialize(mx.init.Uniform(0.5))
    net3(nd.zeros((1, 4,)))  # deferred shapes resolved eagerly
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    try:
        with J():
            a11 = net3(a1)
            a13 = nd.dot(a11, a12, transpose_b=True)
            with autograd.record(train_mode=False):
                a14 = nd.sin(a1)
                a15 = nd.sign(a13)
                a19 = nd.elemwise_add(a14, a1)
            autograd.backward([a14, a19])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 301977, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
