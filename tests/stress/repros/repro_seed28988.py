"""minpy_jit fuzz reproducer: seed 28988, shrunk from 20 to 12 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 0 (jit): [('left the scope', 'raised', 'MXNetError')] vs []

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed28988.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(28988)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 2,)), dtype='float32')
    a5.attach_grad()
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 2,)), dtype='float32')
    a7.attach_grad(grad_req='add')
    net9 = gluon.nn.Dense(1, in_units=4, activation=None)
    net9.initialize(mx.init.Uniform(0.5))
    net9(nd.zeros((2, 2, 2,)))  # deferred shapes resolved eagerly
    net9.hybridize()
    tr10 = gluon.Trainer(net9.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record(train_mode=False):
                a6 = nd.sigmoid(a5)
                a8 = a6 / a7
            a6.backward()
            with autograd.record():
                a11 = net9(a8)
                a12 = (a11 * a11).mean()
            a12.backward()
            tr10.step(2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 28988, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
