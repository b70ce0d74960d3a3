"""minpy_jit fuzz reproducer: seed 29850, shrunk from 34 to 10 statements.

First difference (eager vs jit()): final[7][1][6]: value at (0, 0) is 3.2028563 (eager) vs 2.2684743 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed29850.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(29850)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 3,)), dtype='float32')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 3,)), dtype='float32')
    a16 = nd.array(RNG.uniform(0.0, 0.5, (2, 5,)), dtype='float32')
    a17 = nd.array(RNG.uniform(0.0, 0.5, (1, 1, 3,)), dtype='float32')
    try:
        with J():
            a6 = nd.random.normal(0, 2, shape=(2, 1,))
            a9 = nd.concat(a6, a6, a8, dim=1)
            OBS.append(R(a9))
            nd.multi_sgd_mom_update(a9, a13, a16, a14, a15, a17, out=[a9, a14], lrs=(abs(-0.75), abs(-0.75), ), wds=(0.0, 0.0, ), momentum=0.9, num_weights=2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 29850, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
