"""minpy_jit fuzz reproducer: seed 1131196, shrunk from 32 to 12 statements.

First difference (eager vs jit()): final[1][2][6]: value at (2,) is -0.81377566 (eager) vs -7.6731165e+21 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1131196.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1131196)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    a2 = nd.array(RNG.randint(0, 3, (3,)), dtype='float32')
    net4 = gluon.nn.Dense(3, in_units=3, activation=None)
    net4.initialize(mx.init.Uniform(0.5))
    net4(nd.zeros((3, 3,)))  # deferred shapes resolved eagerly
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a10.attach_grad()
    try:
        with J():
            a6 = net4(a1)
            with autograd.record():
                a11 = nd.sin(a10)
                a12 = a11 * a2
                a13 = (((((nd.relu(a10) * -2.7) * a12) + 0.0) + a12) * 1e-3)
                a14 = nd.sum(a13, axis=0, keepdims=False)
                a15 = nd.FullyConnected(a6, a1, a12, num_hidden=3)
            autograd.backward([a15, a14])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1131196, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
