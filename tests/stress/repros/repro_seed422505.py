"""minpy_jit fuzz reproducer: seed 422505, shrunk from 31 to 4 statements.

First difference (eager vs jit()): final[1][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (3, 2, 1, 3), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[-0.5262757 , -1.0515106 ,  0.01480883]],

        [[ 1.3738804 ,  0.8740873 ,  0.34866673]]],


       [[[  vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed422505.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(422505)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2, 1, 3,)), dtype='float32')
    try:
        with J():
            a8 = nd.maximum(a1, a1)
            a12 = nd.random.shuffle(a8)
            a13 = nd.tile(a12, reps=(1, 2, 2, 2,))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 422505, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
