"""minpy_jit fuzz reproducer: seed 79251, shrunk from 39 to 7 statements.

First difference (eager vs jit()): final[3][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (4, 5), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[-0.95506763, -2.0812736 , -2.919641  ,  0.8314088 , -3.6544538 ],
       [-1.2045028 , -2.1393166 , -1.7817216 ,  0 vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed79251.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(79251)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a9 = nd.array(RNG.uniform(0.0, 0.5, (4, 1,)), dtype='float32')
    a27 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a28 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    try:
        with J():
            a10 = nd.log1p(nd.abs(a9) + 0.5)
            a29 = nd.concat(a10, a27, a28, dim=1)
            a30 = a29.reshape((4, -1,))
            nd.multi_sgd_update(a30, a29, out=[a30], lrs=(abs(3.0), ), wds=(0.0, ), num_weights=1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 79251, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
