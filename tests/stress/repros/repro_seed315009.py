"""minpy_jit fuzz reproducer: seed 315009, shrunk from 37 to 30 statements.

First difference (eager vs jit()): final[16][1][6]: value at (0, 0) is 0.029225852 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed315009.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(315009)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    net4 = gluon.nn.HybridSequential()
    net4.add(gluon.nn.Dense(4, activation='tanh'), gluon.nn.Dense(2))
    net4.initialize(mx.init.Uniform(0.5))
    net4(nd.zeros((3, 3,)))  # deferred shapes resolved eagerly
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 3, 1,)), dtype='float32')
    a6.attach_grad()
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3,)), dtype='float16')
    a19.attach_grad()
    try:
        with J():
            a3 = a2[2]
            a5 = net4(a2)
            with autograd.record(train_mode=False):
                a7 = nd.relu(a6)
                a8 = nd.Activation(a5, act_type='softrelu')
            try:
                a7.backward()
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a6))
            l9 = nd.split(a8, num_outputs=2, axis=1, squeeze_axis=True)
            a10 = l9[0]
            a12 = nd.elemwise_sub(a8, a5)
            a13 = net4(a2)
            a14 = -a13
            with J():
                a15 = a12 * -1.5
                a16 = nd.repeat(a12, repeats=2, axis=1)
                a17 = a16 - -1.5
            a18 = nd.square(nd.exp((((a16 - a17) * a16) - a16)))
            a20 = nd.argsort(a19, axis=0)
            a21 = nd.log1p(nd.abs(a13) + 0.5)
            a22 = nd.tanh(a18)
            a23 = a2[:, 0:2]
            l24 = nd.split(a22, num_outputs=3, axis=0)
            a25 = l24[1]
            a26 = a23 - 0.25
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 315009, exact=False, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
