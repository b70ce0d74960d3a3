"""minpy_jit fuzz reproducer: seed 33653, shrunk from 25 to 7 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 0) is 1.0 (eager) vs 1e-45 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed33653.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(33653)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1, 4, 2,)), dtype='float32')
    a8 = nd.array(RNG.uniform(0.0, 0.5, (4, 1, 4, 2,)), dtype='float32')
    net9 = gluon.nn.Dense(1, in_units=8, activation='relu')
    net9.initialize(mx.init.Uniform(0.5))
    net9(nd.zeros((4, 1, 4, 2,)))  # deferred shapes resolved eagerly
    try:
        with J():
            with autograd.record():
                a11 = net9(a8)
            a15 = nd.tile(a6, reps=(2, 1, 2, 2,))
            a16 = nd.cos(a11)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 33653, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
