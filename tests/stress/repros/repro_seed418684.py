"""minpy_jit fuzz reproducer: seed 418684, shrunk from 12 to 5 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed418684.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(418684)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 2, 4,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 2, 4,)), dtype='float32')
    a9.attach_grad()
    try:
        with J():
            with autograd.record(train_mode=False):
                a10 = nd.elemwise_add(a7, a9)
            a10.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 418684, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
