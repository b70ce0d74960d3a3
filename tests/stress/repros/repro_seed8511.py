"""minpy_jit fuzz reproducer: seed 8511, shrunk from 53 to 8 statements.

First difference (eager vs jit()): final[4][1][1][1][6]: value at (0,) is 0.00018499953 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed8511.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(8511)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float32')
    a3.attach_grad()
    net8 = gluon.nn.BatchNorm(in_channels=4)
    net8.initialize(mx.init.Uniform(0.5))
    net8(nd.zeros((5, 4,)))  # deferred shapes resolved eagerly
    tr9 = gluon.Trainer(net8.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            a4 = nd.sigmoid(a3)
            with autograd.record():
                a10 = net8(a4)
                a11 = (a10 * a10).mean()
            a11.backward()
            tr9.step(5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 8511, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
