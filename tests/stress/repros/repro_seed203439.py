"""minpy_jit fuzz reproducer: seed 203439, shrunk from 27 to 10 statements.

First difference (eager vs jit()): final[1][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (4, 3, 2), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[ 2.4335563 ,  2.1949546 ],
        [ 2.4585376 ,  3.532611  ],
        [-0.07838935,  0.4310726 ]],

       [[- vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed203439.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(203439)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 2,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1, 1,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4, 4, 1,)), dtype='float16')
    a17 = nd.array(RNG.uniform(0.0, 0.5, (4, 3, 2,)), dtype='float32')
    try:
        with J():
            a9 = a8 / a7
            a12 = 0.25 * a9
            a13 = nd.minimum(a7, 2.0)
            a15 = nd.argsort(a14, axis=3)
            for it in range(12):
                nd.sgd_mom_update(a13, a12, a17, lr=0.1, momentum=0.9, wd=0.0, out=a13)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 203439, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
