"""minpy_jit fuzz reproducer: seed 2531, shrunk from 34 to 4 statements.

First difference (eager vs jit()): final[3][1][6]: value at (0, 0, 0) is 1.0 (eager) vs 3.1581646e+29 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed2531.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(2531)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 3,)), dtype='float16')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 2,)), dtype='float32')
    a18.attach_grad()
    try:
        with J():
            a17 = nd.sort(a16, axis=2)
            a19 = (a18 <= -0.75)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 2531, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
