"""minpy_jit fuzz reproducer: seed 84432, shrunk from 45 to 4 statements.

First difference (eager vs jit()): final[1][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (4, 3, 2, 5), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[-2.9924154 ,  2.2779288 ,  1.4873625 , -0.4205165 ,
          -0.47202426],
         [ 0.5905869 ,  1.85373 vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed84432.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(84432)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 2, 5,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 2, 5,)), dtype='float32')
    a10.attach_grad()
    try:
        with J():
            a11 = a3 + a10
            a12 = nd.tile(a10, reps=(2, 2, 2, 2,))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 84432, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
