"""minpy_jit fuzz reproducer: seed 20015, shrunk from 35 to 6 statements.

First difference (eager vs jit()): final[2][2][6]: value at (0, 0, 0, 0) is inf (eager) vs nan (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed20015.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(20015)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 5, 4,)), dtype='float32')
    a7.attach_grad()
    try:
        with J():
            with autograd.record():
                a18 = nd.relu(a7)
                for it in range(5):
                    a19 = nd.exp(nd.exp((nd.square((nd.abs(nd.sigmoid(a18)) * 7.5)) + 2.0)))
            a19.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 20015, exact=False, config={'fuse': True, 'segment_ops': 16, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
