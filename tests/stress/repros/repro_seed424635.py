"""minpy_jit fuzz reproducer: seed 424635, shrunk from 22 to 3 statements.

First difference (eager vs jit()): final[2][1][6]: value at (4,) is 67.08634 (eager) vs 67.08641 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed424635.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(424635)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 4,)), dtype='float32')
    a2.attach_grad()
    try:
        with J():
            a4 = nd.reshape(a2, shape=(-1,))
            a6 = (nd.exp(((nd.square((nd.tanh(nd.clip(a4, -3.0, 3.0)) + a4)) + -1.5) * 3.0)) - 7.5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 424635, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
