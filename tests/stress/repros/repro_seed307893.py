"""minpy_jit fuzz reproducer: seed 307893, shrunk from 36 to 4 statements.

First difference (eager vs jit()): final[3][1][6]: value at (0, 0) is 154.84186 (eager) vs 154.84203 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed307893.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(307893)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2,)), dtype='float32')
    a1.attach_grad()
    try:
        with J():
            a2 = nd.Activation(a1, act_type='softrelu')
            a6 = nd.Custom(a1, op_type='fuzz_affine')
            a7 = nd.broadcast_power(a2, a6)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 307893, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
