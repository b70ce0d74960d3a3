"""minpy_jit fuzz reproducer: seed 404946, shrunk from 18 to 6 statements.

First difference (eager vs jit()): final[1][1][6]: value at (0, 0) is 8.430525 (eager) vs 3.498769e-18 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed404946.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(404946)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 2, 1,)), dtype='float32')
    a7.attach_grad()
    try:
        with J():
            a8 = nd.broadcast_add(a7, a7)
            a9 = nd.topk(a2, axis=1, k=1, ret_typ='value')
            a10 = nd.tile(a8, reps=(2, 2, 2, 2,))
            a11 = a9 + 7.5
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 404946, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
