"""minpy_jit fuzz reproducer: seed 418039, shrunk from 29 to 25 statements.

First difference (eager vs jit()): final[10][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (2, 1, 4, 1), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[ 0.2402455 ],
         [ 2.0339425 ],
         [-0.9780525 ],
         [ 0.7998333 ]]],


       [[[ 0.6880 vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed418039.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(418039)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 4, 5,)), dtype='float16')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 3,)), dtype='float32')
    a8 = nd.array(RNG.uniform(0.0, 0.5, (1, 1, 3,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 1,)), dtype='float32')
    a9.attach_grad()
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 2,)), dtype='float32')
    a10.attach_grad()
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 2,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 4, 1,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 4, 1,)), dtype='float32')
    a21 = nd.array(RNG.uniform(0.0, 0.5, (2, 1, 4, 1,)), dtype='float32')
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 3, 1,)), dtype='float32')
    a22.attach_grad()
    try:
        with J():
            a2 = a1 - a1
            with J():
                a3 = nd.reciprocal(nd.abs(a1) + 0.5)
                a4 = nd.stack(a2, a3, a2, axis=2)
                a6 = nd.sort(a5, axis=0)
                nd.sgd_mom_update(a4, a7, a8, lr=0.1, momentum=0.9, wd=0.01, out=a4)
            a12 = nd.stack(a9, a9, axis=0)
            a14 = nd.rsqrt(nd.abs(a13) + 0.5)
            with autograd.record():
                a15 = nd.exp(a9)
                a17 = a8 / a16
                nd.rmsprop_update(a19, a20, a21, lr=0.1, out=a19)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 418039, exact=False, config={'fuse': True, 'segment_ops': 0, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
