"""minpy_jit fuzz reproducer: seed 400265, shrunk from 10 to 4 statements.

First difference (eager vs jit()): final[3][1][6]: value at (1, 1, 3, 3) is 19121.354 (eager) vs 19121.281 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed400265.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(400265)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 4, 5,)), dtype='float32')
    try:
        with J():
            a4 = ((nd.exp(nd.exp(nd.exp(a3))) * 1e-3) - 7.5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 400265, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
