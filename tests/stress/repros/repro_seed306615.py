"""minpy_jit fuzz reproducer: seed 306615, shrunk from 35 to 3 statements.

First difference (eager vs jit()): final[0][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (1, 1, 6, 3), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[-2.,  1.,  0.],
         [ 1., -2.,  1.],
         [ 1., -2.,  1.],
         [ 1.,  0.,  0.],
         [-1. vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed306615.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(306615)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 6, 3,)), dtype='float32')
    try:
        with J():
            a16 = nd.floor(a5)
            a21 = nd.tile(a16, reps=(2, 2, 2, 2,))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 306615, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
