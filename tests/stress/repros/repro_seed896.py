"""minpy_jit fuzz reproducer: seed 896, shrunk from 47 to 13 statements.

First difference (eager vs jit()): final[10][1][6]: value at (0, 0, 0, 0) is 9 (eager) vs -1922144560 (jit) [bit-exact required]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed896.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(896)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a10 = nd.array(RNG.uniform(0.0, 0.5, (1, 2, 3,)), dtype='float32')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 1,)), dtype='float32')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 4, 4,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 2, 2,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a20.attach_grad(grad_req='add')
    try:
        with J():
            a14 = (nd.sigmoid(nd.clip(a10, -3.0, 3.0)) - 1e-3)
            a4 *= 0.0
            a15 = nd.softsign(a14)
            a17 = a16 ** 2
            a21 = nd.Convolution(a18, a19, a20, kernel=(2, 2), pad=(1, 1), num_filter=1)
            a22 = nd.tile(a18, reps=(2, 2, 2, 2,))
            a23 = nd.random.randint(0, 10, shape=(3, 3, 4, 1,))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 896, exact=True, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
