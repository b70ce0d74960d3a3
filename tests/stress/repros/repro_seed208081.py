"""minpy_jit fuzz reproducer: seed 208081, shrunk from 46 to 5 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 1) is -0.2568495 (eager) vs -0.91835874 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed208081.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(208081)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    try:
        with J():
            a21 = nd.concat(a18, a20, dim=1)
            with autograd.record():
                nd.tanh(a21, out=a21)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 208081, exact=False, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
