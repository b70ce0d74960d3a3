"""minpy_jit fuzz reproducer: seed 76692, shrunk from 35 to 7 statements.

First difference (eager vs jit()): OBS[0][1]: 3.5442110265390925 (eager) vs 3.544211026539092 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed76692.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(76692)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2, 3,)), dtype='float32')
    a3.attach_grad(grad_req='add')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 2,)), dtype='float64')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 2,)), dtype='float64')
    a10 = nd.array(RNG.uniform(0.0, 0.5, (3, 3, 2,)), dtype='float64')
    a11 = nd.array(RNG.uniform(0.0, 0.5, (3, 3, 2,)), dtype='float64')
    try:
        with J():
            nd.adam_update(a8, a9, a10, a11, lr=0.1, wd=0.01, out=a8)
            OBS.append(R(a11.sum().asscalar()))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 76692, exact=True, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
