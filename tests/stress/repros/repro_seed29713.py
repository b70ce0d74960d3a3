"""minpy_jit fuzz reproducer: seed 29713, shrunk from 49 to 14 statements.

First difference (eager vs jit()): final[8][1][6]: value at (0, 1, 2, 3) is 0.0 (eager) vs 1.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed29713.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(29713)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4, 3,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a3.attach_grad()
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float64')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float64')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 5,)), dtype='float64')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 5,)), dtype='float64')
    a9 = nd.array(RNG.uniform(0.0, 0.5, (1, 4, 5,)), dtype='float64')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 3, 4,)), dtype='float32')
    try:
        with J():
            a35 = nd.Activation(a25, act_type='tanh')
            a38 = nd.broadcast_greater(a25, a35)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 29713, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
