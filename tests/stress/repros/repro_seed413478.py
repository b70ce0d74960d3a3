"""minpy_jit fuzz reproducer: seed 413478, shrunk from 52 to 13 statements.

First difference (eager vs jit()): OBS: 2 items (eager) vs 1 (jit): [('raised', 'MXNetError'), ('left the scope', 'raised', 'MXNetError')] vs [('raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed413478.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(413478)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a1.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 4,)), dtype='float64')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float32')
    net14 = gluon.nn.Dense(4, in_units=1, activation='relu')
    net14.initialize(mx.init.Uniform(0.5))
    net14(nd.zeros((2, 1,)))  # deferred shapes resolved eagerly
    tr15 = gluon.Trainer(net14.collect_params(), 'nag', {'learning_rate': 0.1, 'momentum': 0.5})
    try:
        with J():
            with autograd.record():
                a8 = nd.sigmoid(a1)
                a10 = nd.broadcast_greater(a8, a9)
                a11 = a6.T
                a16 = net14(a9)
                a17 = (a16 * a16).mean()
                try:
                    a17.backward()
                    tr15.step(2)
                except Exception as e:
                    OBS.append(X(e))
            l18 = autograd.grad(a10, [a1])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 413478, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
