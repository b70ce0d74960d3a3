"""minpy_jit fuzz reproducer: seed 20220, shrunk from 27 to 11 statements.

First difference (eager vs jit()): final[7][1][0][2][6]: value at (0, 0) is -0.0026533017 (eager) vs 6.319498 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed20220.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(20220)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 4, 3,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2, 3, 3,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a12.attach_grad(grad_req='add')
    net19 = gluon.nn.Dense(2, in_units=36, activation='sigmoid')
    net19.initialize(mx.init.Uniform(0.5))
    net19(nd.zeros((1, 3, 4, 3,)))  # deferred shapes resolved eagerly
    try:
        with J():
            a6 = nd.Convolution(a1, a4, a5, kernel=(3, 3), pad=(1, 1), num_filter=3)
            with autograd.record():
                a18 = nd.relu(a12)
                a20 = net19(a6)
                try:
                    a20[:] = -1.5
                except Exception as e:
                    OBS.append(X(e))
            autograd.backward([a18, a20])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 20220, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
