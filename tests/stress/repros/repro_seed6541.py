"""minpy_jit fuzz reproducer: seed 6541, shrunk from 34 to 6 statements.

First difference (eager vs jit()): final[2][1][3][1][6]: value at (0,) is 0.9 (eager) vs 0.80999994 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed6541.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(6541)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    net20 = gluon.nn.BatchNorm(in_channels=4)
    net20.initialize(mx.init.Uniform(0.5))
    net20(nd.zeros((4, 4,)))  # deferred shapes resolved eagerly
    try:
        with J():
            a5 = nd.zeros((4, 4,))
            with autograd.record():
                for it in range(2):
                    a21 = net20(a5)
            a21.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 6541, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
