"""minpy_jit fuzz reproducer: seed 207225, shrunk from 37 to 32 statements.

First difference (eager vs jit()): final[12][1][6]: value at (0, 0) is -0.7463325063759427 (eager) vs 0.6501223927186426 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed207225.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(207225)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 2,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5, 5,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1, 2,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a8.attach_grad(grad_req='add')
    a10 = nd.array(RNG.randint(0, 5, (5,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4, 1, 1,)), dtype='float16')
    a14.attach_grad()
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float64')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float64')
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5, 3,)), dtype='float64')
    a23 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 4,)), dtype='float64')
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5, 3,)), dtype='float64')
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 4,)), dtype='float64')
    a26 = nd.array(RNG.uniform(0.0, 0.5, (3, 1,)), dtype='float64')
    a27 = nd.array(RNG.uniform(0.0, 0.5, (5, 5, 3,)), dtype='float64')
    a28 = nd.array(RNG.uniform(0.0, 0.5, (1, 3, 4,)), dtype='float64')
    a31 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 4,)), dtype='float64')
    a31.attach_grad()
    a32 = nd.array(RNG.randint(0, 5, (2,)), dtype='float32')
    try:
        with J():
            a7 = nd.fix(a6)
            with J():
                a1 -= a1
                a11 = nd.pick(a6, a10, axis=1)
                a12 = nd.array(RNG.uniform(-1, 1, (1, 3,)))
            a15 = nd.sort(a14, axis=0)
            a18 = nd.zeros((2, 2, 5, 1,))
            nd.multi_sgd_mom_update(a20, a21, a26, a22, a24, a27, a23, a25, a28, out=[a20, a22, a23], lrs=(abs(2.0), abs(2.0), abs(2.0), ), wds=(0.0, 0.0, 0.0, ), momentum=0.9, num_weights=3)
            l29 = nd.split(a4, num_outputs=2, axis=2)
            a30 = l29[0]
            a28 -= a31
            a33 = nd.one_hot(a32, depth=5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 207225, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
