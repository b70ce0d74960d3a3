"""minpy_jit fuzz reproducer: seed 321949, shrunk from 25 to 6 statements.

First difference (eager vs jit()): final[1][2][6]: value at (0, 0) is 1.9215244 (eager) vs -0.0094073415 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed321949.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(321949)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    a2.attach_grad()
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a4.attach_grad(grad_req='add')
    try:
        with J():
            with autograd.record():
                a5 = nd.square((((nd.clip(nd.square(nd.clip(nd.tanh((a4 * a4)), -3.0, 3.0)), -3.0, 3.0) - 2.0) * a4) + a4))
                try:
                    a4 += a2
                except Exception as e:
                    OBS.append(X(e))
            a5.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 321949, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
