"""minpy_jit fuzz reproducer: seed 212037, shrunk from 29 to 9 statements.

First difference (eager vs jit()): final[6][2][6]: value at (0,) is 0.0 (eager) vs nan (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed212037.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(212037)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 2,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 4, 2,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a3.attach_grad(grad_req='add')
    try:
        with J():
            with autograd.record(train_mode=False):
                a18 = nd.relu(a3)
                a19 = nd.max(a18, axis=0, keepdims=False)
                a21 = nd.broadcast_hypot(a19, a19)
                a22 = nd.floor(a21)
            a22.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 212037, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
