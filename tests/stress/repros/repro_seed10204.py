"""minpy_jit fuzz reproducer: seed 10204, shrunk from 51 to 11 statements.

First difference (eager vs jit()): final[0][1][6]: value at (0, 0, 0, 0) is 5.9861646 (eager) vs 0.6795298 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed10204.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(10204)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 1, 3,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 3, 3,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 2, 3,)), dtype='float32')
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 6, 3,)), dtype='float32')
    a23 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 4,)), dtype='float32')
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 4,)), dtype='float32')
    a25 = nd.array(RNG.uniform(0.0, 0.5, (4, 5, 6, 3,)), dtype='float32')
    a26 = nd.array(RNG.uniform(0.0, 0.5, (1, 2, 4,)), dtype='float32')
    try:
        with J():
            a10 = nd.concat(a7, a8, a9, dim=2)
            a11 = a9.reshape((4, 5, 2, 3, 1,))
            nd.multi_sgd_mom_update(a10, a22, a25, a23, a24, a26, out=[a10, a23], lrs=(abs(3.0), abs(3.0), ), wds=(0.01, 0.01, ), momentum=0.9, num_weights=2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 10204, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
