"""minpy_jit fuzz reproducer: seed 403688, shrunk from 63 to 10 statements.

First difference (eager vs jit()): final[5][1][1][1][6]: value at (0,) is 0.00017363782 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed403688.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(403688)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    net27 = gluon.nn.BatchNorm(in_channels=4)
    net27.initialize(mx.init.Uniform(0.5))
    net27(nd.zeros((4, 4,)))  # deferred shapes resolved eagerly
    tr28 = gluon.Trainer(net27.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            a23 = 3.0 - a22
            nd.tanh(a24, out=a23)
            with autograd.record():
                a29 = net27(a23)
                a30 = (a29 * a29).mean()
            a30.backward()
            tr28.step(4)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 403688, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
