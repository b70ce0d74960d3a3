"""minpy_jit fuzz reproducer: seed 416248, shrunk from 23 to 21 statements.

First difference (eager vs jit()): final[2][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (6, 4), "<class 'numpy.float64'>", 'cpu(0)', 'default', array([[ 0.88637527, -1.76827791, -1.84566519,  0.45030502],
       [ 1.        ,  1.        ,  1.        ,  1.        ],
  vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed416248.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(416248)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 5, 4,)), dtype='float16')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    a5.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float64')
    a10.attach_grad(grad_req='add')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a16.attach_grad()
    try:
        with J():
            a4 = nd.argsort(a3, axis=3)
            a7 = nd.FullyConnected(a2, a5, a6, num_hidden=3)
            a11 = nd.tile(a10, reps=(2, 1,))
            for it in range(2):
                a12 = a8[1:3]
                a13 = nd.expm1(a7)
                with autograd.record():
                    a14 = nd.sin(a5)
                    a15 = nd.tanh(a12)
                    try:
                        a11[1:3] = 1.0
                    except Exception as e:
                        OBS.append(X(e))
                    try:
                        a15[:] = a15 * 2 + 1
                    except Exception as e:
                        OBS.append(X(e))
                try:
                    a14.backward()
                except Exception as e:
                    OBS.append(X(e))
                a12 += a16
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 416248, exact=False, config={'fuse': False, 'segment_ops': 64, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
