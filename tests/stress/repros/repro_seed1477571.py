"""minpy_jit fuzz reproducer: seed 1477571, shrunk from 40 to 8 statements.

First difference (eager vs jit()): final[1][2][6]: value at (0, 2) is 0.6133666 (eager) vs -0.45438635 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1477571.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1477571)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 3,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a17.attach_grad(grad_req='add')
    try:
        with J():
            a2 = nd.sum(a1, axis=2, keepdims=False)
            with autograd.record():
                a18 = nd.linalg.gemm2(a2, a17, alpha=-1.5)
                a19 = (((a18 * 0.1) - 0.37) * -0.75)
            a19.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1477571, exact=False, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
