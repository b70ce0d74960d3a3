"""minpy_jit fuzz reproducer: seed 7617, shrunk from 36 to 6 statements.

First difference (eager vs jit()): final[1][1][6]: value at (0, 0, 0, 0) is 0.2221024 (eager) vs 0.23667514 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed7617.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(7617)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a4.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 2, 1,)), dtype='float32')
    a13 = nd.array(RNG.uniform(0.0, 0.5, (1, 1, 2, 1,)), dtype='float32')
    try:
        with J():
            a12 = a9[:, 0:1]
            nd.nag_mom_update(a12, a9, a13, lr=0.1, momentum=0.9, out=a12)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 7617, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
