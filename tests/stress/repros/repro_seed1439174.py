"""minpy_jit fuzz reproducer: seed 1439174, shrunk from 16 to 7 statements.

First difference (eager vs jit()): final[4][1][0][6]: value at (0, 0) is 0.0 (eager) vs nan (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1439174.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1439174)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    a2.attach_grad()
    try:
        with J():
            with autograd.record():
                a5 = nd.relu((nd.softsign((nd.negative(((((a2 - 7.5) * -2.7) + a2) * a2)) * 0.5)) * 1e-3))
                a6 = a2 / a5
                FLUSH()
                a7 = nd.argmax(a6, axis=1)
            l10 = autograd.grad(a7, [a2])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1439174, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
