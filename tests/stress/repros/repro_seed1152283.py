"""minpy_jit fuzz reproducer: seed 1152283, shrunk from 38 to 4 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 0) is 2.6103728 (eager) vs -1.3804429 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1152283.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1152283)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a5 = nd.array(RNG.uniform(0.0, 0.5, (3, 3,)), dtype='float32')
    try:
        with J():
            a2 = nd.random.normal(0, 2, shape=(3, 3,))
            a3 = a2.as_in_context(mx.cpu(0))
            nd.nag_mom_update(a2, a3, a5, lr=abs(-1.5), momentum=0.9, out=a2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1152283, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
