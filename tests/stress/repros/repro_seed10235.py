"""minpy_jit fuzz reproducer: seed 10235, shrunk from 48 to 7 statements.

First difference (eager vs jit()): final[5][1][2][1][6]: value at (0,) is 0.0 (eager) vs 0.035156045 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed10235.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(10235)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 2,)), dtype='float32')
    a3.attach_grad()
    net13 = gluon.nn.BatchNorm(in_channels=4)
    net13.initialize(mx.init.Uniform(0.5))
    net13(nd.zeros((5, 4, 2,)))  # deferred shapes resolved eagerly
    try:
        with J():
            with autograd.record():
                a11 = nd.relu(a3)
                a12 = nd.flatten(a11)
                a14 = net13(a11)
            l15 = autograd.grad(a12, [a3])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 10235, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
