"""minpy_jit fuzz reproducer: seed 30580, shrunk from 37 to 6 statements.

First difference (eager vs jit()): final[2][2][6]: value at (0, 0, 0, 0) is 4.9711356 (eager) vs 4.09361 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed30580.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(30580)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 3, 3,)), dtype='float32')
    a4.attach_grad(grad_req='add')
    try:
        with J():
            with autograd.record(train_mode=False):
                a19 = nd.sigmoid(a4)
                a20 = (((((a19 + 2.0) + a19) * a4) - -1.5) + 7.5)
                try:
                    a19 /= 2.0
                except Exception as e:
                    OBS.append(X(e))
            autograd.backward([a20, a19])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 30580, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
