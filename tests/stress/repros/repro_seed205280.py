"""minpy_jit fuzz reproducer: seed 205280, shrunk from 36 to 35 statements.

First difference (eager vs jit()): final[7][1][6]: value at (0, 0) is -0.8524592130279194 (eager) vs 4.305322753263325e-96 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed205280.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(205280)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a2.attach_grad()
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 4, 6,)), dtype='float32')
    a4.attach_grad()
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 3, 3,)), dtype='float32')
    a5.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float16')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 5,)), dtype='float64')
    a15.attach_grad()
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float64')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float64')
    a17.attach_grad()
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2, 1, 3,)), dtype='float32')
    a20.attach_grad()
    net22 = gluon.nn.Conv2D(3, kernel_size=1, in_channels=2)
    net22.initialize(mx.init.Uniform(0.5))
    net22(nd.zeros((5, 2, 1, 3,)))  # deferred shapes resolved eagerly
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 4, 3,)), dtype='float32')
    net26 = gluon.nn.Dense(3, in_units=4, activation='sigmoid')
    net26.initialize(mx.init.Uniform(0.5))
    net26(nd.zeros((1, 2, 2, 1,)))  # deferred shapes resolved eagerly
    net26.hybridize()
    try:
        with J():
            a7 = nd.Convolution(a4, a5, a6, kernel=(3, 3), pad=(0, 0), num_filter=3)
            with autograd.record(train_mode=False):
                a8 = nd.tanh(a4)
                with J():
                    a10 = nd.sort(a9, axis=0)
                    a11 = a4 - a8
                a12 = (nd.abs(nd.relu(a11)) + 1e-3)
                l13 = nd.split(a12, num_outputs=2, axis=3)
                a14 = l13[0]
                try:
                    del a10
                except Exception as e:
                    OBS.append(X(e))
                for it in range(3):
                    a19 = nd.sum(a14)
            try:
                a14.backward(retain_graph=True)
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a4))
            a21 = nd.nansum(a20)
            a23 = net22(a20)
            a25 = nd.Pooling(a24, kernel=(2, 2), stride=(2, 2), pool_type='avg')
            a27 = net26(a25)
            a28 = nd.arange(0, 1)
            a29 = a9.sum(axis=0, keepdims=False)
            a30 = a23.as_in_context(mx.cpu(0))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 205280, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
