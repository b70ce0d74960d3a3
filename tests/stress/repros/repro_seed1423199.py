"""minpy_jit fuzz reproducer: seed 1423199, shrunk from 26 to 14 statements.

First difference (eager vs jit()): final[5][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (1, 7), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[ 1.1327814 ,  0.28789678, -3.8066096 ,  4.827908  , -0.25952604,
         3.22779   , -0.343177  ]], dtype=float32) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1423199.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1423199)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a2.attach_grad()
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    a4.attach_grad(grad_req='add')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (1, 7,)), dtype='float32')
    net13 = gluon.nn.BatchNorm(in_channels=7)
    net13.initialize(mx.init.Uniform(0.5))
    net13(nd.zeros((3, 7,)))  # deferred shapes resolved eagerly
    tr14 = gluon.Trainer(net13.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    try:
        with J():
            a3 = a2.T
            a5 = nd.concat(a3, a4, a4, dim=1)
            a10 = a5.sum(axis=0, keepdims=True)
            a12 = nd.broadcast_mul(a10, a11)
            with autograd.record():
                a15 = net13(a5)
                a16 = (a15 * a15).mean()
            a16.backward()
            tr14.step(3)
            a17 = nd.broadcast_mul(a10, a12)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1423199, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
