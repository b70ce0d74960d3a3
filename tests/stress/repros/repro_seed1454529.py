"""minpy_jit fuzz reproducer: seed 1454529, shrunk from 45 to 5 statements.

First difference (eager vs jit()): final[0][2][6]: value at (1, 0) is 0.14043176 (eager) vs -0.21615982 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1454529.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1454529)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a33 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2,)), dtype='float32')
    a33.attach_grad(grad_req='add')
    try:
        with J():
            with autograd.record(train_mode=False):
                a34 = nd.linalg.gemm2(a4, a33, alpha=0.5)
            a34.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1454529, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
