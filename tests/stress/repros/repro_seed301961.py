"""minpy_jit fuzz reproducer: seed 301961, shrunk from 34 to 20 statements.

First difference (eager vs jit()): final[15][1][0][2][6]: value at (0, 0) is -0.0003788211 (eager) vs -0.00037720567 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed301961.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(301961)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 3,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 2,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float64')
    a7.attach_grad()
    a8 = nd.array(RNG.randint(0, 5, (1,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 5, 6,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 1, 1,)), dtype='float32')
    a11.attach_grad()
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a14 = nd.array(RNG.randint(0, 2, (3, 3,)), dtype='float32')
    net20 = gluon.nn.Dense(4, in_units=3, activation='sigmoid')
    net20.initialize(mx.init.Uniform(0.5))
    net20(nd.zeros((3, 3,)))  # deferred shapes resolved eagerly
    net24 = gluon.nn.LayerNorm(in_channels=4)
    net24.initialize(mx.init.Uniform(0.5))
    net24(nd.zeros((3, 4,)))  # deferred shapes resolved eagerly
    tr25 = gluon.Trainer(net24.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            a15 = nd.pick(a2, a14, axis=2)
            with autograd.record(train_mode=False):
                a19 = nd.exp(a11)
                a21 = net20(a15)
                a22 = nd.clip(((a21 * 7.5) - a21), -3.0, 3.0)
                a26 = net24(a22)
                a27 = (a26 * a26).mean()
                a27.backward()
                tr25.step(3)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 301961, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
