"""minpy_jit fuzz reproducer: seed 11357, shrunk from 17 to 7 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 0, 0, 0) is 2.3497763 (eager) vs 1.6694001 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed11357.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(11357)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 1, 4,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 3, 4,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 1, 4,)), dtype='float32')
    a4.attach_grad()
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 5, 4,)), dtype='float32')
    try:
        with J():
            a3 = nd.concat(a1, a1, a2, dim=2)
            a1[:] = a4
            nd.sgd_update(a3, a8, lr=abs(0.5), wd=0.0, out=a3)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 11357, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
