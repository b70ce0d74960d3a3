"""minpy_jit fuzz reproducer: seed 22078, shrunk from 16 to 8 statements.

First difference (eager vs jit()): final[3][1][1][1][6]: value at (1,) is -1.4901161e-06 (eager) vs 7.4505806e-07 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed22078.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(22078)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 2,)), dtype='float32')
    net2 = gluon.nn.BatchNorm(in_channels=3)
    net2.initialize(mx.init.Uniform(0.5))
    net2(nd.zeros((2, 3, 2,)))  # deferred shapes resolved eagerly
    tr3 = gluon.Trainer(net2.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            nd.tanh(a1, out=a1)
            with autograd.record():
                a4 = net2(a1)
                a5 = (a4 * a4).mean()
            a5.backward()
            tr3.step(2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 22078, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
