"""minpy_jit fuzz reproducer: seed 19955, shrunk from 9 to 4 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 0) is 0.01182504 (eager) vs -0.2782392 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed19955.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(19955)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    a2.attach_grad()
    a5 = nd.array(RNG.uniform(0.0, 0.5, (1, 2,)), dtype='float32')
    try:
        with J():
            a4 = a2[:, 0:2]
            nd.nag_mom_update(a4, a2, a5, lr=abs(0.5), momentum=0.9, out=a4)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 19955, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
