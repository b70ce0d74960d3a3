"""minpy_jit fuzz reproducer: seed 212697, shrunk from 41 to 27 statements.

First difference (eager vs jit()): final[18][1][6]: value at (0, 0) is 0.058744714 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed212697.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(212697)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 1, 2,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float16')
    net22 = gluon.nn.Conv2D(3, kernel_size=1, in_channels=2)
    net22.initialize(mx.init.Uniform(0.5))
    net22(nd.zeros((2, 2, 1, 2,)))  # deferred shapes resolved eagerly
    tr23 = gluon.Trainer(net22.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    a26 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    try:
        with J():
            a3 = nd.flatten(a1)
            a5 = a3.T
            a13 = nd.gamma(nd.abs(a5) + 0.5)
            with autograd.record():
                a14 = nd.exp(a1)
                a17 = nd.sign(a15)
                with autograd.pause():
                    a18 = a3.T
                    a20 = nd.argsort(a19, axis=1)
            try:
                a14.backward()
            except Exception as e:
                OBS.append(X(e))
            a21 = a19[1:2]
            with autograd.record():
                a24 = net22(a6)
                a25 = (a24 * a24).mean()
            try:
                a25.backward()
                tr23.step(2)
            except Exception as e:
                OBS.append(X(e))
            a29 = a17.reshape((1, -1,))
            a30 = nd.sin(a29)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 212697, exact=False, config={'fuse': True, 'segment_ops': 0, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
