"""minpy_jit fuzz reproducer: seed 323000, shrunk from 43 to 8 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed323000.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(323000)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 5,)), dtype='float32')
    a16.attach_grad()
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 5,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    try:
        with J():
            with autograd.record():
                a17 = nd.relu(a16)
                a19 = nd.elemwise_add(a17, a18)
                a21 = 1.0 * a20
            l22 = autograd.grad(a19, [a16])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 323000, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
