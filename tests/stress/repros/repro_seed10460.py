"""minpy_jit fuzz reproducer: seed 10460, shrunk from 45 to 6 statements.

First difference (eager vs jit()): final[4][1][6]: value at (0,) is -1.1519669 (eager) vs 0.9289807 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed10460.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(10460)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2, 5, 2,)), dtype='float32')
    a29 = nd.array(RNG.uniform(0.0, 0.5, (20,)), dtype='float32')
    try:
        with J():
            a22 = nd.mean(a20, axis=0, keepdims=False)
            a27 = nd.reshape(a22, shape=(-1,))
            a28 = a27.as_in_context(mx.cpu(0))
            nd.nag_mom_update(a28, a27, a29, lr=abs(-1.5), momentum=0.9, out=a28)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 10460, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
