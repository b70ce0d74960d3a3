"""minpy_jit fuzz reproducer: seed 76651, shrunk from 31 to 31 statements.

First difference (eager vs jit()): final[15][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (1,), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([-1.8025843], dtype=float32)) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed76651.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(76651)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 1,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 1,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1, 2, 5,)), dtype='float16')
    a3.attach_grad()
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1, 1, 1,)), dtype='float16')
    a5.attach_grad()
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1, 2, 5,)), dtype='float16')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    net12 = gluon.nn.BatchNorm(in_channels=1)
    net12.initialize(mx.init.Uniform(0.5))
    net12(nd.zeros((1, 1,)))  # deferred shapes resolved eagerly
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float32')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 2, 2,)), dtype='float16')
    a21.attach_grad()
    a23 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    try:
        with J():
            a4 = nd.sum(a3, axis=2, keepdims=True)
            a6 = nd.elemwise_mul(a3, a7)
            with J():
                try:
                    a8 = a4.T
                    a10 = nd.dot(a9, a9)
                    a11 = a2 / a2
                    raise Boom('mid-block')
                except Boom as e:
                    OBS.append(X(e))
                a13 = net12(a10)
            a14 = nd.zeros((5, 4,))
            a15 = nd.floor(a14)
            a16 = nd.exp(nd.sigmoid(nd.tanh(((nd.softsign((a10 + a9)) - 1e-3) * a13))))
            a17 = nd.cos(a15)
            a19 = nd.broadcast_sub(a18, a18)
            a19[:] = a18
            a20 = nd.softmax(a1, axis=0)
            for it in range(3):
                a2 *= S[it]
                a22 = nd.argsort(a21, axis=0)
            OBS.append(R(a21.asnumpy()))
            a24 = nd.slice(a23, begin=(2,), end=(3,))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 76651, exact=False, config={'fuse': True, 'segment_ops': 4, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
