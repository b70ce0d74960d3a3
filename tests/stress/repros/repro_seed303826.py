"""minpy_jit fuzz reproducer: seed 303826, shrunk from 50 to 6 statements.

First difference (eager vs jit()): final[5][1][6]: value at (0, 0, 0, 1) is 0.03968645 (eager) vs 0.03968673 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed303826.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(303826)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 5, 3,)), dtype='float32')
    a26 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 2, 2,)), dtype='float32')
    a27 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    try:
        with J():
            a28 = nd.Convolution(a25, a26, a27, kernel=(2, 2), pad=(1, 1), num_filter=2)
            a29 = nd.Activation(a28, act_type='softrelu')
            a32 = nd.negative((nd.tanh(nd.abs(a29)) * a28))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 303826, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
