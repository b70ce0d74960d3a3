"""minpy_jit fuzz reproducer: seed 81185, shrunk from 23 to 16 statements.

First difference (eager vs jit()): final[7][1][6]: value at (0,) is 1.0 (eager) vs -0.73820394 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed81185.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(81185)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3, 5,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2,)), dtype='float32')
    a5 = nd.array(RNG.randint(0, 5, (4,)), dtype='float32')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float16')
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float32')
    try:
        with J():
            a6 = nd.pick(a1, a5, axis=1)
            a11 = nd.sort(a10, axis=1)
            a13 = nd.softsign(nd.clip(((nd.sigmoid(nd.negative(nd.clip(a6, -3.0, 3.0))) - a9) * a12), -3.0, 3.0))
            a14 = nd.tanh(nd.tanh(nd.exp(a9)))
            FLUSH()
            a15 = (a14 > -1.5)
            a18 = nd.random.shuffle(a17)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 81185, exact=False, config={'fuse': True, 'segment_ops': 0, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
