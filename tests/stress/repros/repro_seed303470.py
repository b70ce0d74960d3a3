"""minpy_jit fuzz reproducer: seed 303470, shrunk from 17 to 4 statements.

First difference (eager vs jit()): final[1][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (1, 4), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[ 0.2505907 , -0.8176278 , -0.51225734,  1.4924086 ]],
      dtype=float32)) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed303470.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(303470)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2, 1, 1,)), dtype='float32')
    a8.attach_grad()
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    try:
        with J():
            a9 = nd.tile(a8, reps=(2, 2, 2, 2,))
            a11 = (nd.clip(nd.clip((nd.sigmoid((nd.negative((nd.exp(a10) + 1.0)) * a10)) - 0.25), -3.0, 3.0), -3.0, 3.0) + a10)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 303470, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
