"""minpy_jit fuzz reproducer: seed 400462, shrunk from 21 to 7 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 2 (jit): [('array', 'NDArray', (5, 2, 2, 3), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[5.683955  , 3.2387834 , 0.17986305],
         [7.7470837 , 0.2575823 , 1.9636756 ]],

        [[1.3869095  vs [('array', 'NDArray', (5, 2, 2, 3), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[5.683955  , 3.2387834 , 0.17986305],
         [7.7470837 , 0.2575823 , 1.9636756 ]],

        [[1.3869095 

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed400462.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(400462)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2, 2, 3,)), dtype='float32')
    a2.attach_grad()
    try:
        with J():
            with autograd.record():
                a4 = nd.sigmoid(a2)
                a6 = nd.elemwise_add(a4, a2)
                a7 = a6 ** 2
                OBS.append(R(a7))
            a6.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 400462, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
