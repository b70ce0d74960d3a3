"""minpy_jit fuzz reproducer: seed 208540, shrunk from 46 to 7 statements.

First difference (eager vs jit()): final[3][1][0][2][6]: value at (0, 0) is -0.8228714 (eager) vs -0.24370523 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed208540.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(208540)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 1,)), dtype='float32')
    net22 = gluon.nn.Dense(4, in_units=5, activation='sigmoid')
    net22.initialize(mx.init.Uniform(0.5))
    net22(nd.zeros((4, 5, 1,)))  # deferred shapes resolved eagerly
    try:
        with J():
            with autograd.record():
                a23 = net22(a21)
                a24 = a23[1:4]
                try:
                    a23 += a23
                except Exception as e:
                    OBS.append(X(e))
            a23.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 208540, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
