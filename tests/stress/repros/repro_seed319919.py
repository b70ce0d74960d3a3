"""minpy_jit fuzz reproducer: seed 319919, shrunk from 52 to 52 statements.

First difference (eager vs jit()): final[30][1][6]: value at (0, 0) is 0.24673097 (eager) vs 524.4154 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed319919.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(319919)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float32')
    net4 = gluon.nn.Dense(5, in_units=4, activation=None)
    net4.initialize(mx.init.Uniform(0.5))
    net4(nd.zeros((3, 4,)))  # deferred shapes resolved eagerly
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    a11.attach_grad()
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3,)), dtype='float32')
    a23 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 2, 4,)), dtype='float32')
    a23.attach_grad()
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a26 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a28 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a30 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float16')
    a32 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a35 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a35.attach_grad(grad_req='add')
    a37 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a37.attach_grad()
    try:
        with J():
            a3 = nd.clip(a1, -1.0, 1.0)
            a5 = net4(a3)
            try:
                del a1
            except Exception as e:
                OBS.append(X(e))
            OBS.append(P(a2))
            a6 = nd.sqrt(nd.abs(a5) + 0.5)
            a8 = (nd.sigmoid(((a6 * a5) * a7)) * -1.5)
            a9 = nd.topk(a7, axis=0, k=1, ret_typ='value')
            for it in range(2):
                OBS.append(P(a5))
                a7.wait_to_read()
                a10 = (nd.relu(nd.clip(nd.abs(nd.abs((nd.clip(nd.abs(a3), -3.0, 3.0) - 1.0))), -3.0, 3.0)) + a3)
            with autograd.record():
                a12 = nd.relu(a11)
                a13 = nd.round(a10)
                a14 = a12.astype('float64')
                a18 = nd.dot(a16, a17)
                a19 = nd.clip(nd.clip(nd.softsign(((nd.clip(nd.tanh(((a18 - 0.0) * 0.0)), -3.0, 3.0) + 2.0) * 3.0)), -3.0, 3.0), -3.0, 3.0)
                FLUSH()
            try:
                a14.backward()
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a11))
            l21 = nd.split(a20, num_outputs=3, axis=1)
            a22 = l21[2]
            a24 = nd.negative(a23)
            a27 = nd.FullyConnected(a22, a25, a26, num_hidden=4)
            a29 = (((a6 + a28) * a8) - 0.25)
            a31 = nd.argsort(a30, axis=0)
            a33 = nd.broadcast_minimum(a26, a32)
            a34 = nd.sum(a33)
            a36 = a22 / a35
            a38 = nd.stack(a34, a34, axis=1)
            with autograd.record():
                a39 = nd.sigmoid(a35)
                a40 = nd.mish(a35)
            try:
                autograd.backward([a39, a40])
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a35))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 319919, exact=False, config={'fuse': True, 'segment_ops': 16, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
