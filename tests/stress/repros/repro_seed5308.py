"""minpy_jit fuzz reproducer: seed 5308, shrunk from 35 to 7 statements.

First difference (eager vs jit()): final[1][1][6]: value at (0, 3) is 0.11031954787517899 (eager) vs 0.110319547875179 (jit) [bit-exact required]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed5308.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(5308)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float64')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float64')
    a11 = nd.array(RNG.uniform(0.0, 0.5, (5, 4,)), dtype='float64')
    a12 = nd.array(RNG.uniform(0.0, 0.5, (5, 4,)), dtype='float64')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    try:
        with J():
            a5 = a4.copy()
            nd.adam_update(a5, a10, a11, a12, lr=abs(2.0), wd=0.01, out=a5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 5308, exact=True, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
