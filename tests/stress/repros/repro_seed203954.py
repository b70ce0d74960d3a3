"""minpy_jit fuzz reproducer: seed 203954, shrunk from 20 to 11 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 2 (jit): [('array', 'NDArray', (4, 2), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[ 0.19400978, -0.4387983 ],
       [ 0.31719562, -0.88630056],
       [ 0.15565112, -0.2540298 ],
       [-0.118835 vs [('array', 'NDArray', (4, 2), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[ 0.19400978, -0.4387983 ],
       [ 0.31719562, -0.88630056],
       [ 0.15565112, -0.2540298 ],
       [-0.118835

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed203954.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(203954)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2,)), dtype='float32')
    a1.attach_grad()
    net4 = gluon.nn.Dense(2, in_units=2, activation=None)
    net4.initialize(mx.init.Uniform(0.5))
    net4(nd.zeros((4, 2,)))  # deferred shapes resolved eagerly
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 4, 3,)), dtype='float16')
    try:
        with J():
            a5 = net4(a1)
            OBS.append(R(a5))
            with autograd.record():
                a11 = nd.sigmoid(a1)
                a12 = nd.gamma(nd.abs(a11) + 0.5)
                a13 = nd.elemwise_add(a12, a11)
                l15 = nd.split(a14, num_outputs=3, axis=1)
            l17 = autograd.grad(a13, [a1])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 203954, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
