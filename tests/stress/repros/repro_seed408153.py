"""minpy_jit fuzz reproducer: seed 408153, shrunk from 42 to 8 statements.

First difference (eager vs jit()): final[1][1][6]: value at (0, 0) is 27.082985 (eager) vs 27.083075 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed408153.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(408153)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5, 5,)), dtype='float32')
    a2.attach_grad()
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float64')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float64')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1, 25,)), dtype='float32')
    try:
        with J():
            a3 = nd.tanh(a2)
            a8 = (nd.negative((nd.exp(((nd.exp((nd.square(a3) - a3)) + a2) * 1.0)) + 0.25)) - 1.0)
            a9 = a8.reshape((2, -1,))
            a11 = nd.dot(a9, a10, transpose_b=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 408153, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
