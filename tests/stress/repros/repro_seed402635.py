"""minpy_jit fuzz reproducer: seed 402635, shrunk from 30 to 5 statements.

First difference (eager vs jit()): final[0][2][6]: value at (0, 1) is 1.0 (eager) vs 2.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed402635.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(402635)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a2.attach_grad(grad_req='add')
    try:
        with J():
            for it in range(2):
                with autograd.record():
                    a20 = nd.relu(nd.clip(nd.clip(a2, -3.0, 3.0), -3.0, 3.0))
                a20.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 402635, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
