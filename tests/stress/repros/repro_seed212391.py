"""minpy_jit fuzz reproducer: seed 212391, shrunk from 24 to 5 statements.

First difference (eager vs jit()): final[0][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (5, 4), "<class 'numpy.float64'>", 'cpu(0)', 'default', array([[-0.05033141, -0.35704637, -0.35704637, -0.35704637],
       [ 0.71993529,  1.19289394,  0.38935354, -0.73918397],
  vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed212391.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(212391)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1, 1, 5,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float64')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float64')
    try:
        with J():
            a4 = nd.tile(a3, reps=(2, 2, 2, 2,))
            a10 = nd.broadcast_maximum(a8, a9)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 212391, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
