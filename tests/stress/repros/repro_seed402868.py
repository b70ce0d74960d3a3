"""minpy_jit fuzz reproducer: seed 402868, shrunk from 46 to 9 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 2 (jit): [('array', 'NDArray', (4, 4), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[3.7041366e-01, 3.0202073e-01, 1.1108681e+00, 1.0690175e+00],
       [1.8663889e-01, 1.0404410e-05, 2.3196577e-01,  vs [('array', 'NDArray', (4, 4), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[3.7041366e-01, 3.0202073e-01, 1.1108681e+00, 1.0690175e+00],
       [1.8663889e-01, 1.0404410e-05, 2.3196577e-01, 

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed402868.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(402868)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    a2.attach_grad(grad_req='add')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a15.attach_grad(grad_req='add')
    a23 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a23.attach_grad()
    try:
        with J():
            a14 = nd.square(a2)
            OBS.append(R(a14))
            with autograd.record():
                a22 = nd.relu(a15)
                a24 = nd.elemwise_add(a22, a23)
            a24.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 402868, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
