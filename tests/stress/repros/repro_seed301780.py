"""minpy_jit fuzz reproducer: seed 301780, shrunk from 60 to 13 statements.

First difference (eager vs jit()): final[9][1][1][1][6]: value at (1,) is -0.006746253 (eager) vs -0.0068430617 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed301780.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(301780)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 5,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5,)), dtype='float32')
    a4.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float32')
    a6.attach_grad()
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2,)), dtype='float32')
    a10.attach_grad()
    net14 = gluon.nn.LayerNorm(in_channels=2)
    net14.initialize(mx.init.Uniform(0.5))
    net14(nd.zeros((2, 2,)))  # deferred shapes resolved eagerly
    tr15 = gluon.Trainer(net14.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record():
                a11 = nd.tanh(a10)
                l12 = nd.split(a11, num_outputs=2, axis=0)
                a13 = l12[1]
                a16 = net14(a13)
                a17 = (a16 * a16).mean()
                a17.backward()
                tr15.step(2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 301780, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
