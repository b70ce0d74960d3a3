"""minpy_jit fuzz reproducer: seed 1433, shrunk from 46 to 6 statements.

First difference (eager vs jit()): final[3][1][6]: value at (0, 0, 0) is 0.091573246 (eager) vs 0.09375163 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1433.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1433)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 4,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 5,)), dtype='float32')
    a32 = nd.array(RNG.uniform(0.0, 0.5, (2, 1, 5,)), dtype='float32')
    try:
        with J():
            a11 = nd.batch_dot(a9, a10)
            a12 = a11.as_in_context(mx.cpu(0))
            nd.nag_mom_update(a12, a11, a32, lr=0.1, momentum=0.9, out=a12)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1433, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
