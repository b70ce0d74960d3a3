"""minpy_jit fuzz reproducer: seed 76271, shrunk from 32 to 7 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 2 (jit): [('array', 'NDArray', (5, 3), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[-0.22844952,  0.34767103,  1.0630442 ],
       [-1.5381835 ,  0.53720987,  0.2644739 ],
       [-0.4727515 ,  1.84 vs [('array', 'NDArray', (5, 3), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[-0.22844952,  0.34767103,  1.0630442 ],
       [-1.5381835 ,  0.53720987,  0.2644739 ],
       [-0.4727515 ,  1.84

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed76271.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(76271)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3,)), dtype='float32')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2,)), dtype='float32')
    a7.attach_grad()
    try:
        with J():
            OBS.append(R(a1))
            with autograd.record():
                a8 = nd.sin(a7)
                a13 = nd.elemwise_add(a7, a8)
            a13.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 76271, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
