"""minpy_jit fuzz reproducer: seed 19133, shrunk from 38 to 8 statements.

First difference (eager vs jit()): OBS: 2 items (eager) vs 1 (jit): [('array', 'NDArray', (4, 4), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[0.23595648, 0.13068943, 0.12348725, 0.12984812],
       [0.2499362 , 0.10730079, 0.1318732 , 0.21890202],
       [ vs [('array', 'NDArray', (4, 4), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[0.23595648, 0.13068943, 0.12348725, 0.12984812],
       [0.24993621, 0.10730079, 0.1318732 , 0.21890202],
       [

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed19133.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(19133)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    a1.attach_grad()
    try:
        with J():
            with autograd.record(train_mode=False):
                a11 = nd.sigmoid(a1)
                a12 = nd.random.uniform_like(a11, low=0, high=1)
            a11.backward()
            OBS.append(G(a1))
            with autograd.record():
                a12[:] = 0.0
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 19133, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
