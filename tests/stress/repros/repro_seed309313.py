"""minpy_jit fuzz reproducer: seed 309313, shrunk from 38 to 8 statements.

First difference (eager vs jit()): final[4][1][1][1][6]: value at (3,) is -0.00086126465 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed309313.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(309313)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 2,)), dtype='float32')
    a2.attach_grad()
    net9 = gluon.nn.BatchNorm(in_channels=5)
    net9.initialize(mx.init.Uniform(0.5))
    net9(nd.zeros((1, 5, 2,)))  # deferred shapes resolved eagerly
    net9.hybridize()
    tr10 = gluon.Trainer(net9.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record():
                a7 = nd.tanh(a2)
                a11 = net9(a7)
                a12 = (a11 * a11).mean()
                a12.backward()
                tr10.step(1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 309313, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
