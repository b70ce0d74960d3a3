"""minpy_jit fuzz reproducer: seed 3512, shrunk from 43 to 4 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 0, 0) is 0.5598226 (eager) vs -0.51697254 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed3512.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(3512)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1, 2,)), dtype='float32')
    a6 = nd.array(RNG.uniform(0.0, 0.5, (5, 1, 2,)), dtype='float32')
    try:
        with J():
            a3 = a1.as_in_context(mx.cpu(0))
            nd.nag_mom_update(a1, a3, a6, lr=abs(1.0), momentum=0.9, out=a1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 3512, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
