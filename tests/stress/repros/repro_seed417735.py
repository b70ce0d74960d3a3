"""minpy_jit fuzz reproducer: seed 417735, shrunk from 35 to 8 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed417735.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(417735)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5,)), dtype='float32')
    a18.attach_grad()
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    try:
        with J():
            with autograd.record():
                a19 = nd.sin(a18)
                a20 = a18 * 0.5
                a22 = nd.broadcast_lesser_equal(a21, a19)
                a24 = nd.elemwise_add(a22, a19)
            a24.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 417735, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
