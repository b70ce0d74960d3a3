"""minpy_jit fuzz reproducer: seed 304042, shrunk from 12 to 8 statements.

First difference (eager vs jit()): final[4][1][6]: value at (0, 0) is -0.16619090624169752 (eager) vs -0.08200206715597291 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed304042.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(304042)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5, 2, 5,)), dtype='float64')
    a3.attach_grad()
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 4, 10,)), dtype='float64')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float64')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float64')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float64')
    try:
        with J():
            a4 = nd.tile(a3, reps=(2, 1, 2, 2,))
            nd.multi_sgd_update(a4, a5, a6, a7, out=[a4, a6], lrs=(abs(-0.75), abs(-0.75), ), wds=(0.0, 0.0, ), num_weights=2)
            a8.copyto(a7)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 304042, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
