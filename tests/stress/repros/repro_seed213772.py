"""minpy_jit fuzz reproducer: seed 213772, shrunk from 9 to 3 statements.

First difference (eager vs jit()): final[1][1]: 2 items (eager) vs 7 (jit): ('raised', 'MXNetError') vs ('array', 'NDArray', (4, 2, 4), "<class 'numpy.float16'>", 'cpu(0)', 'default', array([[[1., 1., 1., 1.],
        [1., 1., 1., 1.]],

       [[1., 1., 1., 1.],
        [1., 1., 1., 1.]],

       [[1.,

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed213772.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(213772)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 4,)), dtype='float16')
    try:
        with J():
            a3 = nd.sort(a2, axis=0)
            a3[:, 0:2] = 1.0
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 213772, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
