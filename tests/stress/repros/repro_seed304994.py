"""minpy_jit fuzz reproducer: seed 304994, shrunk from 42 to 12 statements.

First difference (eager vs jit()): final[8][1][0][1][6]: value at (1, 0) is -0.329426 (eager) vs -0.32942507 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed304994.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(304994)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 5,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 1, 1,)), dtype='float16')
    a4.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 5,)), dtype='float32')
    net23 = gluon.nn.HybridSequential()
    net23.add(gluon.nn.Dense(2, activation='tanh'), gluon.nn.Dense(4))
    net23.initialize(mx.init.Uniform(0.5))
    net23(nd.zeros((1, 3, 5,)))  # deferred shapes resolved eagerly
    tr24 = gluon.Trainer(net23.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            a7 = a1 - a6
            with autograd.record():
                a25 = net23(a7)
                a26 = (a25 * a25).mean()
            a26.backward()
            tr24.step(1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 304994, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
