"""minpy_jit fuzz reproducer: seed 306961, shrunk from 29 to 29 statements.

First difference (eager vs jit()): final[12][1][6]: value at (0, 0) is -1.002185 (eager) vs -0.007679901 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed306961.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(306961)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4, 4, 2,)), dtype='float64')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float64')
    a6.attach_grad()
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float64')
    a7.attach_grad(grad_req='add')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a9.attach_grad()
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 3,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 5,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float16')
    a17.attach_grad()
    try:
        with J():
            with J():
                a2 = nd.random.normal(0, 2, shape=(2, 5,))
                a3 = a1 / (0.5 + 4.0)
            a4 = ((nd.sigmoid(nd.tanh((nd.clip(((a1 - a1) + a1), -3.0, 3.0) + 3.0))) * 3.0) + -0.75)
            a8 = nd.dot(a6, a7)
            try:
                a1 += a9
                raise Boom('mid-block')
            except Boom as e:
                OBS.append(X(e))
            try:
                a10 = nd.maximum(a2, 1e-3)
                raise Boom('mid-block')
            except Boom as e:
                OBS.append(X(e))
            with autograd.record():
                a11 = nd.sin(a9)
                a15 = nd.batch_dot(a13, a14)
                mx.random.seed(32)
                a16 = nd.maximum(a6, a6)
                a18 = nd.sort(a17, axis=0)
                a19 = nd.prod(a10, axis=0, keepdims=True)
                a20 = nd.where(a9 > 0, a9, a9)
            try:
                a20.backward()
            except Exception as e:
                OBS.append(X(e))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 306961, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
