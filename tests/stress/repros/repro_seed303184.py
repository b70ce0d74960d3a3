"""minpy_jit fuzz reproducer: seed 303184, shrunk from 37 to 6 statements.

First difference (eager vs jit()): final[3][1][6]: value at (0,) is 51150990.0 (eager) vs 51150904.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed303184.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(303184)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4, 2, 1,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 2, 5,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float32')
    try:
        with J():
            a4 = nd.nansum(a3)
            a12 = nd.Activation(a11, act_type='softrelu')
            a13 = nd.broadcast_power(a12, a4)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 303184, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
