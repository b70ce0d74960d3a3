"""minpy_jit fuzz reproducer: seed 28753, shrunk from 48 to 6 statements.

First difference (eager vs jit()): final[2][2][6]: value at (2, 0) is 0.22423288 (eager) vs 0.22419353 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed28753.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(28753)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a4.attach_grad()
    try:
        with J():
            with autograd.record(train_mode=False):
                a27 = nd.sin(a4)
                a28 = nd.sigmoid(nd.relu(nd.tanh(a27)))
                try:
                    a27[2:3] = 0.25
                except Exception as e:
                    OBS.append(X(e))
            a28.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 28753, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
