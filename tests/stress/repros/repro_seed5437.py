"""minpy_jit fuzz reproducer: seed 5437, shrunk from 43 to 8 statements.

First difference (eager vs jit()): final[4][1][1][1][6]: value at (0,) is 5.9604645e-06 (eager) vs -1.0244548e-06 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed5437.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(5437)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 3,)), dtype='float32')
    a7.attach_grad()
    net16 = gluon.nn.BatchNorm(in_channels=4)
    net16.initialize(mx.init.Uniform(0.5))
    net16(nd.zeros((2, 4, 3,)))  # deferred shapes resolved eagerly
    net16.hybridize()
    tr17 = gluon.Trainer(net16.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            a8 = nd.sigmoid(a7)
            with autograd.record():
                a18 = net16(a8)
                a19 = (a18 * a18).mean()
            a19.backward()
            tr17.step(2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 5437, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
