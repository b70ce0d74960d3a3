"""minpy_jit fuzz reproducer: seed 1132049, shrunk from 45 to 35 statements.

First difference (eager vs jit()): OBS[6][6]: value at (0, 0) is -2.727548 (eager) vs -2.227548 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1132049.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1132049)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float32')
    a4 = nd.array(RNG.randint(0, 5, (1,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a7.attach_grad(grad_req='add')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 5, 3,)), dtype='float64')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 5, 2,)), dtype='float64')
    net21 = gluon.nn.Dense(4, in_units=3, activation=None)
    net21.initialize(mx.init.Uniform(0.5))
    net21(nd.zeros((1, 3,)))  # deferred shapes resolved eagerly
    tr22 = gluon.Trainer(net21.collect_params(), 'adam', {'learning_rate': 0.01})
    a27 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float32')
    a27.attach_grad()
    try:
        with J():
            with autograd.record(train_mode=False):
                a3 = nd.sin(a1)
                for it in range(3):
                    a8 = nd.linalg.gemm2(a6, a7, alpha=-1.5)
                    a10 = nd.broadcast_add(a9, a8)
                a11 = nd.clip(a10, -1.0, 1.0)
                a14 = 0.1 * a13
            try:
                a10.backward()
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a7))
            try:
                a17 = nd.erf(a9)
                with autograd.record():
                    a23 = net21(a11)
                    a24 = (a23 * a23).mean()
                try:
                    a24.backward()
                    tr22.step(1)
                except Exception as e:
                    OBS.append(X(e))
                raise Boom('mid-block')
            except Boom as e:
                OBS.append(X(e))
            with autograd.record():
                a25 = nd.sigmoid(a1)
                l28 = nd.split(a27, num_outputs=4, axis=1)
                a29 = l28[2]
            try:
                autograd.backward([a29, a25])
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a27))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1132049, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
