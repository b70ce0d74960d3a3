"""minpy_jit fuzz reproducer: seed 84165, shrunk from 56 to 16 statements.

First difference (eager vs jit()): OBS: 3 items (eager) vs 2 (jit): [[('array', 'NDArray', (1, 1, 2), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[ 1.7969303, 11.8908615]]], dtype=float32)), ('array', 'NDArray', (1, 1, 2), "<class 'numpy.float32'>", 'cpu(0 vs [[('array', 'NDArray', (1, 1, 2), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[[ 1.7969303, 11.8908615]]], dtype=float32)), ('array', 'NDArray', (1, 1, 2), "<class 'numpy.float32'>", 'cpu(0

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed84165.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(84165)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a33 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 1,)), dtype='float32')
    a34 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 1,)), dtype='float32')
    a34.attach_grad()
    a35 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 1,)), dtype='float32')
    net41 = gluon.nn.Dense(4, in_units=3, activation=None)
    net41.initialize(mx.init.Uniform(0.5))
    net41(nd.zeros((1, 3, 1,)))  # deferred shapes resolved eagerly
    tr42 = gluon.Trainer(net41.collect_params(), 'nag', {'learning_rate': 0.1, 'momentum': 0.5})
    try:
        with J():
            a4 = nd.random.exponential(2.0, shape=(5, 1, 2,))
            a6 = nd.Custom(a4, op_type='fuzz_affine')
            l8 = nd.split(a6, num_outputs=5, axis=0)
            OBS.append(R(l8))
            with autograd.record(train_mode=False):
                a36 = nd.concat(a33, a34, a35, dim=1)
                with autograd.record():
                    a43 = net41(a35)
                    a44 = (a43 * a43).mean()
                try:
                    a44.backward()
                    tr42.step(1)
                except Exception as e:
                    OBS.append(X(e))
            a36.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 84165, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
