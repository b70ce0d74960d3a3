"""minpy_jit fuzz reproducer: seed 87630, shrunk from 46 to 15 statements.

First difference (eager vs jit()): OBS: 2 items (eager) vs 1 (jit): [('raised', 'MXNetError'), ('left the scope', 'raised', 'MXNetError')] vs [('raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed87630.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(87630)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a3.attach_grad()
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5, 3,)), dtype='float16')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 5, 5,)), dtype='float32')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 3, 3,)), dtype='float32')
    a18.attach_grad()
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    net22 = gluon.nn.Dense(4, in_units=75, activation='sigmoid')
    net22.initialize(mx.init.Uniform(0.5))
    net22(nd.zeros((1, 3, 5, 5,)))  # deferred shapes resolved eagerly
    tr23 = gluon.Trainer(net22.collect_params(), 'sgd', {'learning_rate': 0.05, 'wd': 0.01})
    try:
        with J():
            with autograd.record():
                a12 = nd.stack(a3, a3, axis=1)
                a20 = nd.Convolution(a17, a18, a19, kernel=(3, 3), pad=(0, 0), num_filter=2)
                a21 = nd.cos(a4)
                a24 = net22(a17)
                a25 = (a24 * a24).mean()
                try:
                    a25.backward()
                    tr23.step(1)
                except Exception as e:
                    OBS.append(X(e))
            autograd.backward([a12, a20])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 87630, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
