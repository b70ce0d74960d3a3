"""minpy_jit fuzz reproducer: seed 316894, shrunk from 46 to 7 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed316894.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(316894)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4,)), dtype='float32')
    a2.attach_grad()
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    try:
        with J():
            with autograd.record():
                a3 = nd.tanh(a2)
                a5 = nd.elemwise_add(a3, a2)
                a6 = a4[0]
            a5.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 316894, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
