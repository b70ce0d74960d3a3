"""minpy_jit fuzz reproducer: seed 24600, shrunk from 46 to 6 statements.

First difference (eager vs jit()): final[4][1][6]: value at (0,) is 11.895279 (eager) vs -2.5156226 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed24600.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(24600)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a5 = nd.array(RNG.uniform(0.0, 0.5, (1,)), dtype='float32')
    try:
        with J():
            a2 = a1[1:4]
            a3 = nd.max(a2, axis=0, keepdims=False)
            a4 = a3[0:1]
            nd.nag_mom_update(a4, a3, a5, lr=abs(3.0), momentum=0.9, out=a4)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 24600, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
