"""minpy_jit fuzz reproducer: seed 408797, shrunk from 42 to 16 statements.

First difference (eager vs jit()): final[11][1][6]: value at (0, 0) is 1.6068126 (eager) vs 0.6163898 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed408797.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(408797)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 2, 4,)), dtype='float16')
    a19 = nd.array(RNG.randint(0, 5, (1,)), dtype='float32')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 4, 3,)), dtype='float32')
    a21.attach_grad(grad_req='add')
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    a26 = nd.array(RNG.uniform(0.0, 0.5, (1, 5,)), dtype='float32')
    a27 = nd.array(RNG.uniform(0.0, 0.5, (1, 5,)), dtype='float32')
    a28 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a31 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    a33 = nd.array(RNG.randint(0, 1, (3,)), dtype='float32')
    try:
        with J():
            a18 = nd.sort(a17, axis=0)
            a20 = nd.one_hot(a19, depth=5)
            nd.adam_update(a20, a25, a26, a27, lr=abs(-0.75), wd=0.0, out=a20)
            a30 = nd.expand_dims(a26, axis=1)
            a32 = nd.softsign(a31)
            a32[0:1] = a31
            a34 = nd.take(a30, a33)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 408797, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
