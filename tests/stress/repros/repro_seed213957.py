"""minpy_jit fuzz reproducer: seed 213957, shrunk from 46 to 11 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 2 (jit): [('array', 'NDArray', (4, 2, 2, 2), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[-1.3934069 ,  1.7342154 ],
         [ 0.8655056 , -1.8301115 ]],

        [[-1.1389862 ,  0.47500357],
    vs [('array', 'NDArray', (4, 2, 2, 2), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[-1.3934069 ,  1.7342154 ],
         [ 0.8655056 , -1.8301115 ]],

        [[-1.1389862 ,  0.47500357],
   

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed213957.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(213957)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 2, 2,)), dtype='float32')
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 4, 1,)), dtype='float32')
    a24.attach_grad()
    a33 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1,)), dtype='float64')
    a34 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1,)), dtype='float64')
    a35 = nd.array(RNG.uniform(0.0, 0.5, (1, 1, 1,)), dtype='float64')
    try:
        with J():
            OBS.append(R(a4))
            with autograd.record():
                a30 = nd.sin(a24)
                nd.nag_mom_update(a33, a34, a35, lr=abs(-0.75), momentum=0.9, out=a33)
                a36 = nd.elemwise_add(a24, a30)
            l37 = autograd.grad(a36, [a24])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 213957, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
