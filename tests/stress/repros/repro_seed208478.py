"""minpy_jit fuzz reproducer: seed 208478, shrunk from 29 to 4 statements.

First difference (eager vs jit()): final[3][1][6]: value at (3, 7) is 0.08704834 (eager) vs 0.087046996 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed208478.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(208478)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 4,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 4,)), dtype='float32')
    try:
        with J():
            a4 = nd.flatten(a2)
            a5 = (nd.softsign((nd.abs(((nd.abs((nd.exp(a4) + a4)) * 7.5) - 1.0)) + a4)) * 3.0)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 208478, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
