"""minpy_jit fuzz reproducer: seed 415499, shrunk from 50 to 13 statements.

First difference (eager vs jit()): final[11][1][6]: value at (0,) is 0.1576873 (eager) vs -28558.625 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed415499.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(415499)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 5,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5, 4,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float64')
    a27 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5, 2,)), dtype='float16')
    a32 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    try:
        with J():
            a10 = a9 / (-0.75 + 4.0)
            a23 = nd.cast(a19, dtype='float32')
            a26 = nd.erf(a1)
            a28 = nd.sort(a27, axis=0)
            a29 = nd.nansum(a10, axis=2, keepdims=True)
            a31 = a23.floor()
            a33 = nd.contrib.allclose(a31, a32)
            OBS.append(R(a33))
            a37 = nd.mean(a26)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 415499, exact=False, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
