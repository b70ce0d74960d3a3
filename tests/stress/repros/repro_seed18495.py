"""minpy_jit fuzz reproducer: seed 18495, shrunk from 38 to 3 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 2) is -0.9987186193466187 (eager) vs -0.9987185597419739 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed18495.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(18495)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float32')
    try:
        with J():
            a15 = nd.negative(nd.sigmoid(nd.relu((a12 + 7.5))))
            a21 = a15.astype('float64')
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 18495, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
