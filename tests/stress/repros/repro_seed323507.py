"""minpy_jit fuzz reproducer: seed 323507, shrunk from 51 to 7 statements.

First difference (eager vs jit()): final[5][1][6]: value at (3, 1) is 0.028485656 (eager) vs 0.028479937 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed323507.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(323507)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (6, 2,)), dtype='float32')
    net32 = gluon.nn.Dense(2, in_units=2, activation='relu')
    net32.initialize(mx.init.Uniform(0.5))
    net32(nd.zeros((6, 2,)))  # deferred shapes resolved eagerly
    try:
        with J():
            a33 = net32(a19)
            a34 = nd.broadcast_add(a33, a19)
            a35 = nd.square(nd.exp(nd.abs(((nd.tanh(nd.abs((a34 * 0.25))) + 1e-3) - 2.0))))
            a37 = nd.sin(a35)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 323507, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
