"""minpy_jit fuzz reproducer: seed 208401, shrunk from 41 to 9 statements.

First difference (eager vs jit()): final[0][2][6]: value at (0, 0) is 0.044444744 (eager) vs -0.092783 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed208401.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(208401)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    net3 = gluon.nn.Dense(3, in_units=4, activation=None)
    net3.initialize(mx.init.Uniform(0.5))
    net3(nd.zeros((4, 4,)))  # deferred shapes resolved eagerly
    net8 = gluon.nn.Dense(4, in_units=3, activation='sigmoid')
    net8.initialize(mx.init.Uniform(0.5))
    net8(nd.zeros((4, 3,)))  # deferred shapes resolved eagerly
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    try:
        with J():
            with autograd.record():
                a5 = net3(a1)
                a9 = net8(a5)
                try:
                    a9[:] = a11
                except Exception as e:
                    OBS.append(X(e))
            a9.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 208401, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
