"""minpy_jit fuzz reproducer: seed 16854, shrunk from 21 to 3 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 0) is 0.867397129535675 (eager) vs 0.8673970699310303 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed16854.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(16854)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    try:
        with J():
            a4 = a1.sigmoid()
            a5 = a4.astype('float64')
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 16854, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
