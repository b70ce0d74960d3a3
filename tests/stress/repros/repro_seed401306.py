"""minpy_jit fuzz reproducer: seed 401306, shrunk from 54 to 15 statements.

First difference (eager vs jit()): final[9][1][0][2][6]: value at (0, 0) is -0.34474993 (eager) vs -330.645 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed401306.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(401306)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 2, 2,)), dtype='float32')
    a6.attach_grad(grad_req='add')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3,)), dtype='float32')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a15.attach_grad(grad_req='add')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5, 3, 2,)), dtype='float32')
    a20.attach_grad()
    net27 = gluon.nn.Dense(2, in_units=1, activation='sigmoid')
    net27.initialize(mx.init.Uniform(0.5))
    net27(nd.zeros((5, 1,)))  # deferred shapes resolved eagerly
    try:
        with J():
            a16 = nd.linalg.gemm2(a14, a15, alpha=3.0)
            a17 = nd.elemwise_add(a16, a16)
            a18 = -a6
            with autograd.record():
                a21 = nd.relu(a20)
                a18.wait_to_read()
                a28 = net27(a17)
                try:
                    a21[:] = 3.0
                except Exception as e:
                    OBS.append(X(e))
                try:
                    a28 *= 3.0
                except Exception as e:
                    OBS.append(X(e))
            a28.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 401306, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
