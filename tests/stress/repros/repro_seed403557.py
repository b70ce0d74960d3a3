"""minpy_jit fuzz reproducer: seed 403557, shrunk from 36 to 5 statements.

First difference (eager vs jit()): final[1][2][6]: value at (0, 2) is -1.6025844 (eager) vs -0.3915007 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed403557.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(403557)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2,)), dtype='float32')
    a14.attach_grad()
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a15.attach_grad(grad_req='add')
    try:
        with J():
            with autograd.record():
                a16 = nd.linalg.gemm2(a14, a15, alpha=0.25)
            a16.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 403557, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
