"""minpy_jit fuzz reproducer: seed 300642, shrunk from 51 to 8 statements.

First difference (eager vs jit()): final[6][1][6]: value at (0, 0) is -3.2339698e+32 (eager) vs -3.5382934 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed300642.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(300642)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (6, 2,)), dtype='float32')
    a32 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float16')
    a36 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    try:
        with J():
            a33 = nd.argsort(a32, axis=0)
            a35 = nd.trunc(a20)
            a37 = a35 / a36
            for it in range(12):
                a38 = a37 - 3.0
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 300642, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
