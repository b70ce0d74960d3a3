"""minpy_jit fuzz reproducer: seed 414917, shrunk from 16 to 8 statements.

First difference (eager vs jit()): final[0][2][6]: value at (0, 0, 0, 0) is 0.0 (eager) vs nan (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed414917.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(414917)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(0.0, 0.5, (4, 3,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 1, 1,)), dtype='float32')
    a8.attach_grad(grad_req='add')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1, 1,)), dtype='float32')
    a10.attach_grad()
    try:
        with J():
            with autograd.record():
                a9 = nd.relu(a8)
                a11 = nd.broadcast_power(a10, a9)
                a12 = (a11 == 3.0)
            a12.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 414917, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
