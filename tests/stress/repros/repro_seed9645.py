"""minpy_jit fuzz reproducer: seed 9645, shrunk from 42 to 7 statements.

First difference (eager vs jit()): final[5][1][6]: value at (0, 0) is -0.3955113 (eager) vs 1.5417305 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed9645.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(9645)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 3,)), dtype='float32')
    a1.attach_grad()
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a6 = nd.array(RNG.uniform(0.0, 0.5, (4, 7,)), dtype='float32')
    try:
        with J():
            a2 = nd.min(a1, axis=1, keepdims=False)
            a4 = nd.concat(a2, a3, a2, dim=1)
            a5 = a4[:, 0:7]
            nd.nag_mom_update(a5, a4, a6, lr=abs(-0.75), momentum=0.9, out=a5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 9645, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
