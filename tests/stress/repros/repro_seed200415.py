"""minpy_jit fuzz reproducer: seed 200415, shrunk from 43 to 5 statements.

First difference (eager vs jit()): final[3][1][6]: value at (0,) is 0.00464 (eager) vs -0.9224 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed200415.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(200415)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float16')
    a27 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float16')
    try:
        with J():
            a17 = nd.argsort(a16, axis=1)
            for it in range(12):
                a28 = a27.mean(axis=0, keepdims=False)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 200415, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
