"""minpy_jit fuzz reproducer: seed 403550, shrunk from 53 to 7 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 0 (jit): [('left the scope', 'raised', 'MXNetError')] vs []

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed403550.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(403550)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5,)), dtype='float32')
    a11.attach_grad()
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    try:
        with J():
            with autograd.record():
                a12 = nd.dot(a1, a11)
                del a12
                nd.multi_sgd_update(a1, a14, out=[a1], lrs=(abs(0.25), ), wds=(0.0, ), num_weights=1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 403550, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
