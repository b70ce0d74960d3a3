"""minpy_jit fuzz reproducer: seed 31963, shrunk from 20 to 6 statements.

First difference (eager vs jit()): final[4][1][0][6]: value at (0, 0) is 0.0 (eager) vs nan (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed31963.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(31963)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a13.attach_grad(grad_req='add')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    try:
        with J():
            with autograd.record():
                a14 = nd.relu(a13)
                a16 = nd.broadcast_power(a14, a15)
            l18 = autograd.grad(a14, [a13])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 31963, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
