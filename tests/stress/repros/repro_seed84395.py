"""minpy_jit fuzz reproducer: seed 84395, shrunk from 41 to 8 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 2 (jit): [('array', 'NDArray', (5, 2, 1, 5), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[0.4717289 , 2.0552256 , 3.6415348 , 0.78244996, 4.953351  ]],

        [[0.30175197, 0.5409818 , 1.3134246 vs [('array', 'NDArray', (5, 2, 1, 5), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[0.4717289 , 2.0552256 , 3.6415348 , 0.78244996, 4.953351  ]],

        [[0.30175197, 0.5409818 , 1.3134246

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed84395.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(84395)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2, 1, 5,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a8.attach_grad()
    try:
        with J():
            with autograd.record(train_mode=False):
                a3 = nd.exp(a1)
                OBS.append(R(a3))
                a7 = nd.elemwise_add(a4, a8)
            autograd.backward([a3, a7])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 84395, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
