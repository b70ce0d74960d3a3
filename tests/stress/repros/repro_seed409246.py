"""minpy_jit fuzz reproducer: seed 409246, shrunk from 38 to 9 statements.

First difference (eager vs jit()): final[4][1][1][1][6]: value at (2,) is -0.00023018481 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed409246.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(409246)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1, 4,)), dtype='float32')
    net6 = gluon.nn.Dense(4, in_units=4, activation='sigmoid')
    net6.initialize(mx.init.Uniform(0.5))
    net6(nd.zeros((4, 1, 4,)))  # deferred shapes resolved eagerly
    net10 = gluon.nn.BatchNorm(in_channels=4)
    net10.initialize(mx.init.Uniform(0.5))
    net10(nd.zeros((4, 4,)))  # deferred shapes resolved eagerly
    tr11 = gluon.Trainer(net10.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record():
                a8 = net6(a5)
                a12 = net10(a8)
                a13 = (a12 * a12).mean()
                a13.backward()
                tr11.step(4)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 409246, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
