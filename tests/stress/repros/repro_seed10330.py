"""minpy_jit fuzz reproducer: seed 10330, shrunk from 29 to 7 statements.

First difference (eager vs jit()): final[0][2][6]: value at (0, 0, 0, 0) is 0.0 (eager) vs nan (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed10330.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(10330)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 2, 4,)), dtype='float32')
    a1.attach_grad()
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 2, 1,)), dtype='float32')
    a12.attach_grad()
    try:
        with J():
            with autograd.record():
                a10 = nd.relu(a1)
                a11 = nd.sigmoid((((a10 + 2.0) + a10) * 2.0))
                a13 = nd.broadcast_div(a12, a10)
            autograd.backward([a10, a11])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 10330, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
