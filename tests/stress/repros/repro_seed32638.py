"""minpy_jit fuzz reproducer: seed 32638, shrunk from 38 to 15 statements.

First difference (eager vs jit()): final[0][2][6]: value at (0, 0) is 0.09744788 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed32638.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(32638)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    net3 = gluon.nn.Dense(4, in_units=5, activation=None)
    net3.initialize(mx.init.Uniform(0.5))
    net3(nd.zeros((2, 5,)))  # deferred shapes resolved eagerly
    tr4 = gluon.Trainer(net3.collect_params(), 'sgd', {'learning_rate': 0.05, 'wd': 0.01})
    net10 = gluon.nn.BatchNorm(in_channels=5)
    net10.initialize(mx.init.Uniform(0.5))
    net10(nd.zeros((1, 5,)))  # deferred shapes resolved eagerly
    try:
        with J():
            with autograd.record():
                a5 = net3(a1)
                a6 = (a5 * a5).mean()
            a6.backward()
            tr4.step(2)
            with autograd.record():
                a8 = nd.sin(a1)
                a11 = net10(a2)
                a12 = nd.broadcast_hypot(a8, a11)
                a13 = net10(a11)
            a13.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 32638, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
