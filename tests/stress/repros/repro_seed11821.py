"""minpy_jit fuzz reproducer: seed 11821, shrunk from 8 to 4 statements.

First difference (eager vs jit()): final[3][1][6]: value at (0, 0, 0, 0) is 8.808554 (eager) vs 1406204500000000.0 (jit) [bit-exact required]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed11821.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(11821)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 3, 4,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float16')
    a4.attach_grad()
    try:
        with J():
            a5 = nd.sort(a4, axis=0)
            a6 = ((nd.abs(nd.abs(nd.sigmoid(a1))) + a1) + 7.5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 11821, exact=True, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
