"""minpy_jit fuzz reproducer: seed 1148617, shrunk from 50 to 46 statements.

First difference (eager vs jit()): OBS[1][6]: value at (0, 0) is 0.033881664 (eager) vs -1.6039858 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1148617.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1148617)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5, 3, 1,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5, 3, 1,)), dtype='float32')
    a4 = nd.array(RNG.uniform(0.0, 0.5, (2, 5, 3, 1,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2, 4, 3,)), dtype='float32')
    a6.attach_grad(grad_req='add')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 1, 1,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 3,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 5,)), dtype='float32')
    a13.attach_grad()
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    net21 = gluon.nn.Dense(4, in_units=24, activation=None)
    net21.initialize(mx.init.Uniform(0.5))
    net21(nd.zeros((3, 2, 4, 3,)))  # deferred shapes resolved eagerly
    tr22 = gluon.Trainer(net21.collect_params(), 'sgd', {'learning_rate': 0.1})
    net25 = gluon.nn.HybridSequential()
    net25.add(gluon.nn.Dense(4, activation='tanh'), gluon.nn.Dense(4))
    net25.initialize(mx.init.Uniform(0.5))
    net25(nd.zeros((3, 4,)))  # deferred shapes resolved eagerly
    a27 = nd.array(RNG.randint(0, 4, (3,)), dtype='float32')
    a29 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5, 2, 5,)), dtype='float64')
    a29.attach_grad()
    a33 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a34 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a35 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    try:
        with J():
            nd.nag_mom_update(a2, a3, a4, lr=0.1, momentum=0.9, out=a2)
            a5 = nd.random.shuffle(a3)
            a7 = a6 / (0.5 + 4.0)
            a9 = nd.broadcast_hypot(a7, a8)
            a10 = a9[2]
            nd.signsgd_update(a10, a11, lr=abs(-0.6866924795488460), wd=3e-4, out=a10)
            a12 = nd.negative(a9)
            OBS.append(R(a11.sum().asscalar()))
            with autograd.record():
                a14 = nd.tanh(a6)
                a16 = nd.linalg.gemm2(a1, a15, alpha=2.0)
                a17 = nd.prod(a2, axis=0, keepdims=True)
                a18 = a17.copy()
                a19 = ((nd.negative(nd.tanh((nd.exp(nd.clip(nd.negative((a18 * a18)), -3.0, 3.0)) - 0.25))) - 0.9) + 1.1)
                a20 = nd.minimum(a11, 3.3333333333333335)
            try:
                a16.backward(retain_graph=True)
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a1))
            with autograd.record():
                a23 = net21(a7)
                a24 = (a23 * a23).mean()
            try:
                a24.backward()
                tr22.step(3)
            except Exception as e:
                OBS.append(X(e))
            a26 = net25(a23)
            a28 = nd.pick(a26, a27, axis=1)
            a30 = nd.prod(a29)
            nd.waitall()
            a31 = nd.tile(a7, reps=(1, 2, 2, 2,))
            a32 = nd.slice(a28, begin=(0,), end=(1,))
            a36 = nd.concat(a26, a34, a35, dim=1)
            a37 = a32.copy()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1148617, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
