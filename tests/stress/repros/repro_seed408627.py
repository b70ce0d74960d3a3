"""minpy_jit fuzz reproducer: seed 408627, shrunk from 35 to 32 statements.

First difference (eager vs jit()): final[16][1][6]: value at (0, 0) is 6.303007 (eager) vs -1.581609e-18 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed408627.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(408627)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 2,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a3.attach_grad(grad_req='add')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 2,)), dtype='float32')
    net7 = gluon.nn.Dense(3, in_units=4, activation='sigmoid')
    net7.initialize(mx.init.Uniform(0.5))
    net7(nd.zeros((2, 2, 2,)))  # deferred shapes resolved eagerly
    net7.hybridize()
    tr8 = gluon.Trainer(net7.collect_params(), 'sgd', {'learning_rate': 0.05, 'wd': 0.01})
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float64')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float64')
    a16.attach_grad(grad_req='add')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 2,)), dtype='float16')
    try:
        with J():
            OBS.append(P(a3))
            nd.sgd_update(a2, a6, lr=0.1, wd=0.0, out=a2)
            with autograd.record():
                a9 = net7(a2)
                a10 = (a9 * a9).mean()
            try:
                a10.backward()
                tr8.step(2)
            except Exception as e:
                OBS.append(X(e))
            a13 = a1 * 0.5
            a14 = nd.full((5, 2, 1,), -1.5)
            a17 = nd.dot(a15, a16)
            a19 = nd.transpose(a18)
            a20 = (((nd.exp((a19 + 1e-3)) * 7.5) - 0.5) - 1e-3)
            with autograd.record():
                a21 = nd.tanh(a1)
                OBS.append(R(a20))
                a23 = nd.sort(a22, axis=2)
                try:
                    del a14
                except Exception as e:
                    OBS.append(X(e))
                a24 = nd.log1p(nd.abs(a21) + 0.5)
            a25 = a13[1:2]
            a26 = nd.tile(a20, reps=(2, 2,))
            a27 = nd.maximum(a18, -0.75)
            a28 = nd.random.uniform_like(a26, low=0, high=1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 408627, exact=False, config={'fuse': True, 'segment_ops': 4, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
