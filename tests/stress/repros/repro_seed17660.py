"""minpy_jit fuzz reproducer: seed 17660, shrunk from 12 to 4 statements.

First difference (eager vs jit()): OBS[0]: 2 items (eager) vs 3 (jit): ('py', -2.0954423) vs ('left the scope', 'raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed17660.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(17660)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3, 5, 5,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 5, 1,)), dtype='float32')
    try:
        with J():
            a2 = nd.tile(a1, reps=(2, 1, 2, 2,))
            OBS.append(R(a3.sum().asscalar()))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 17660, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
