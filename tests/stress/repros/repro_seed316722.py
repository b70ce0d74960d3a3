"""minpy_jit fuzz reproducer: seed 316722, shrunk from 35 to 23 statements.

First difference (eager vs jit()): final[14][1][6]: value at (0, 0) is 1.2031521 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed316722.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(316722)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 4, 3,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 2, 2,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 5,)), dtype='float16')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    a18 = nd.array(RNG.uniform(0.0, 0.5, (4, 1,)), dtype='float32')
    a19 = nd.array(RNG.uniform(0.0, 0.5, (3, 2,)), dtype='float32')
    a20 = nd.array(RNG.uniform(0.0, 0.5, (1, 2,)), dtype='float32')
    try:
        with J():
            a6 = nd.Convolution(a3, a4, a5, kernel=(2, 2), pad=(0, 0), num_filter=3)
            a7 = (nd.negative(nd.sigmoid(((a1 * a1) * 0.5))) * 2.0)
            l8 = nd.split(a7, num_outputs=3, axis=1)
            a9 = l8[0]
            a11 = nd.sort(a10, axis=1)
            a12 = nd.flip(a2, axis=0)
            nd.multi_sgd_mom_update(a9, a13, a18, a14, a16, a19, a15, a17, a20, out=[a9, a14, a15], lrs=(abs(0.25), abs(0.25), abs(0.25), ), wds=(0.0, 0.0, 0.0, ), momentum=0.9, num_weights=3)
            a21 = nd.slice(a10, begin=(0, 1, 2,), end=(1, 2, 4,))
            a25 = (nd.exp(nd.negative(nd.square((nd.clip(nd.clip(nd.square(a2), -3.0, 3.0), -3.0, 3.0) + -1.5)))) - a2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 316722, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
