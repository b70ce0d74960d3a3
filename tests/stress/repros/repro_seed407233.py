"""minpy_jit fuzz reproducer: seed 407233, shrunk from 50 to 6 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 0) is 0.9142158 (eager) vs 0.91421807 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed407233.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(407233)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a2.attach_grad()
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a3.attach_grad()
    net5 = gluon.nn.LayerNorm(in_channels=2)
    net5.initialize(mx.init.Uniform(0.5))
    net5(nd.zeros((2, 2,)))  # deferred shapes resolved eagerly
    try:
        with J():
            a12 = a3.tanh()
            a15 = net5(a12)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 407233, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
