"""minpy_jit fuzz reproducer: seed 400603, shrunk from 31 to 9 statements.

First difference (eager vs jit()): final[1][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (3, 3, 2, 5), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[ 1.3330878 ,  1.5427755 ,  0.9629428 , -0.38388443,
           0.04241252],
         [ 1.4124069 , -1.28478 vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed400603.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(400603)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 2, 5,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 2, 2,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float16')
    a21.attach_grad()
    try:
        with J():
            a4 = nd.clip(nd.negative(nd.clip(a1, -3.0, 3.0)), -3.0, 3.0)
            for it in range(5):
                a15 = a4.astype('float32')
                a18 = nd.Convolution(a15, a16, a17, kernel=(2, 2), pad=(0, 0), num_filter=3)
                a22 = nd.argsort(a21, axis=1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 400603, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
