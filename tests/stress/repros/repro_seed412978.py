"""minpy_jit fuzz reproducer: seed 412978, shrunk from 41 to 8 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed412978.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(412978)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3,)), dtype='float32')
    a2.attach_grad()
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 5,)), dtype='float32')
    a3.attach_grad()
    try:
        with J():
            with autograd.record(train_mode=False):
                a6 = nd.sin(a3)
                a7 = nd.cast(a2, dtype='float64')
                a9 = nd.elemwise_add(a3, a6)
                a10 = a9.astype('float32')
            a10.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 412978, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
