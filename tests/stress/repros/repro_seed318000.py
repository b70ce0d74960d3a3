"""minpy_jit fuzz reproducer: seed 318000, shrunk from 43 to 16 statements.

First difference (eager vs jit()): OBS: 2 items (eager) vs 1 (jit): [('raised', 'MXNetError'), ('left the scope', 'raised', 'MXNetError')] vs [('raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed318000.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(318000)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 2,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4, 1, 2,)), dtype='float32')
    a2.attach_grad(grad_req='add')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a8.attach_grad()
    net14 = gluon.nn.BatchNorm(in_channels=5)
    net14.initialize(mx.init.Uniform(0.5))
    net14(nd.zeros((4, 5,)))  # deferred shapes resolved eagerly
    tr15 = gluon.Trainer(net14.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record():
                a3 = nd.sin(a2)
                a4 = a1 / (3.0 + 4.0)
                a9 = nd.dot(a7, a8, transpose_b=True)
                a10 = nd.maximum(a9, -0.75)
                a13 = a4.astype('float32')
                a16 = net14(a7)
                a17 = (a16 * a16).mean()
                try:
                    a17.backward()
                    tr15.step(4)
                except Exception as e:
                    OBS.append(X(e))
            autograd.backward([a10, a3])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 318000, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
