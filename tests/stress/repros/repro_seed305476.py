"""minpy_jit fuzz reproducer: seed 305476, shrunk from 38 to 9 statements.

First difference (eager vs jit()): final[5][1][1][1][6]: value at (1,) is 0.0 (eager) vs -2.9802322e-06 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed305476.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(305476)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4,)), dtype='float32')
    net3 = gluon.nn.Dense(3, in_units=4, activation='sigmoid')
    net3.initialize(mx.init.Uniform(0.5))
    net3(nd.zeros((2, 4,)))  # deferred shapes resolved eagerly
    net7 = gluon.nn.BatchNorm(in_channels=3)
    net7.initialize(mx.init.Uniform(0.5))
    net7(nd.zeros((2, 3,)))  # deferred shapes resolved eagerly
    tr8 = gluon.Trainer(net7.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            a5 = net3(a2)
            with autograd.record():
                a9 = net7(a5)
                a10 = (a9 * a9).mean()
            a10.backward()
            tr8.step(2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 305476, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
