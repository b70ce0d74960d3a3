"""minpy_jit fuzz reproducer: seed 7067, shrunk from 61 to 14 statements.

First difference (eager vs jit()): OBS[0][2]: 'MXNetError' (eager) vs 'NameError' (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed7067.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(7067)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float32')
    a15.attach_grad()
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    net18 = gluon.nn.HybridSequential()
    net18.add(gluon.nn.Dense(3, activation='tanh'), gluon.nn.Dense(3))
    net18.initialize(mx.init.Uniform(0.5))
    net18(nd.zeros((3, 2,)))  # deferred shapes resolved eagerly
    net24 = gluon.nn.HybridSequential()
    net24.add(gluon.nn.Dense(3, activation='tanh'), gluon.nn.Dense(1))
    net24.initialize(mx.init.Uniform(0.5))
    net24(nd.zeros((3, 3,)))  # deferred shapes resolved eagerly
    try:
        with J():
            with autograd.record():
                a17 = nd.FullyConnected(a14, a15, a16, num_hidden=2)
                a19 = net18(a17)
                a20 = nd.log1p(nd.abs(a19) + 0.5)
            a17.backward()
            with autograd.record():
                a26 = net24(a20)
                a27 = (a26 * a26).mean()
            a27.backward()
            tr25.step(3)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 7067, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
