"""minpy_jit fuzz reproducer: seed 12748, shrunk from 43 to 18 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 2 (jit): [('raised', 'MXNetError')] vs [('raised', 'MXNetError'), ('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed12748.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(12748)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 3,)), dtype='float32')
    a2.attach_grad(grad_req='add')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a3.attach_grad()
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 3,)), dtype='float32')
    net16 = gluon.nn.BatchNorm(in_channels=5)
    net16.initialize(mx.init.Uniform(0.5))
    net16(nd.zeros((1, 5, 3,)))  # deferred shapes resolved eagerly
    tr17 = gluon.Trainer(net16.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    try:
        with J():
            with autograd.record():
                a4 = nd.sin(a2)
                a6 = nd.concat(a4, a4, a5, dim=0)
                a7 = nd.softsign(a4)
            with autograd.record():
                a13 = nd.relu(a3)
                a18 = net16(a5)
                a19 = (a18 * a18).mean()
                try:
                    a19.backward()
                    tr17.step(1)
                except Exception as e:
                    OBS.append(X(e))
                a22 = nd.dot(a13, a21)
                a23 = a7 * 2.0
            autograd.backward([a22, a23])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 12748, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
