"""minpy_jit fuzz reproducer: seed 70812, shrunk from 31 to 31 statements.

First difference (eager vs jit()): final[17][1][1][1][6]: value at (0,) is 0.009977266 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed70812.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(70812)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 4,)), dtype='float32')
    a2.attach_grad()
    a4 = nd.array(RNG.randint(0, 5, (2,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    net10 = gluon.nn.HybridSequential()
    net10.add(gluon.nn.Dense(2, activation='tanh'), gluon.nn.Dense(2))
    net10.initialize(mx.init.Uniform(0.5))
    net10(nd.zeros((1, 5,)))  # deferred shapes resolved eagerly
    tr11 = gluon.Trainer(net10.collect_params(), 'nag', {'learning_rate': 0.1, 'momentum': 0.5})
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4, 5,)), dtype='float64')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1,)), dtype='float64')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    a19 = nd.array(RNG.uniform(0.0, 0.5, (1, 2,)), dtype='float32')
    try:
        with J():
            try:
                del a1
            except Exception as e:
                OBS.append(X(e))
            with autograd.record(train_mode=False):
                a3 = nd.tanh(a2)
                a5 = nd.one_hot(a4, depth=5)
                a7 = nd.exp(a6)
                OBS.append(R(a6))
                with autograd.record():
                    a12 = net10(a9)
                    a13 = (a12 * a12).mean()
                try:
                    a13.backward()
                    tr11.step(1)
                except Exception as e:
                    OBS.append(X(e))
                try:
                    a13[0:1] = a13
                except Exception as e:
                    OBS.append(X(e))
            try:
                a3.backward()
            except Exception as e:
                OBS.append(X(e))
            a14 = nd.broadcast_hypot(a13, a13)
            nd.elemwise_add(a13, a14, out=a13)
            a17 = nd.broadcast_minimum(a15, a16)
            nd.sgd_mom_update(a12, a18, a19, lr=abs(1.0), momentum=0.9, wd=0.0, out=a12)
            l20 = nd.split(a6, num_outputs=2, axis=0)
            a21 = l20[0]
            try:
                del a17
            except Exception as e:
                OBS.append(X(e))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 70812, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
