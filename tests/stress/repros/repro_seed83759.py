"""minpy_jit fuzz reproducer: seed 83759, shrunk from 51 to 15 statements.

First difference (eager vs jit()): OBS: 4 items (eager) vs 3 (jit): [('array', 'NDArray', (1, 4, 3, 1), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[0.],
         [0.],
         [0.]],

        [[0.],
         [0.],
         [0.]],

        [[0.],
        vs [('array', 'NDArray', (1, 4, 3, 1), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[[0.],
         [0.],
         [0.]],

        [[0.],
         [0.],
         [0.]],

        [[0.],
       

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed83759.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(83759)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 3, 1,)), dtype='float32')
    a4.attach_grad()
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float32')
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float32')
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a25.attach_grad()
    net27 = gluon.nn.Dense(1, in_units=1, activation='relu')
    net27.initialize(mx.init.Uniform(0.5))
    net27(nd.zeros((2, 1,)))  # deferred shapes resolved eagerly
    tr28 = gluon.Trainer(net27.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            OBS.append(G(a4))
            with autograd.record():
                a23 = nd.sin(a4)
                a26 = nd.FullyConnected(a18, a24, a25, num_hidden=2)
                try:
                    a4 /= 0.5
                except Exception as e:
                    OBS.append(X(e))
                a29 = net27(a24)
                a30 = (a29 * a29).mean()
                try:
                    a30.backward()
                    tr28.step(2)
                except Exception as e:
                    OBS.append(X(e))
            autograd.backward([a23, a26])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 83759, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
