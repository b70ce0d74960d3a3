"""minpy_jit fuzz reproducer: seed 405502, shrunk from 29 to 14 statements.

First difference (eager vs jit()): final[9][1][0][2][6]: value at (1, 0) is -0.01857211 (eager) vs -0.01857237 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed405502.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(405502)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.randint(0, 2, (3,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 5,)), dtype='float32')
    a10.attach_grad()
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 4,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 4,)), dtype='float32')
    a14 = nd.array(RNG.uniform(0.0, 0.5, (1, 5, 5,)), dtype='float32')
    a15 = nd.array(RNG.uniform(0.0, 0.5, (4, 2, 4,)), dtype='float32')
    net18 = gluon.nn.HybridSequential()
    net18.add(gluon.nn.Dense(4, activation='tanh'), gluon.nn.Dense(1))
    net18.initialize(mx.init.Uniform(0.5))
    net18(nd.zeros((1, 5, 5,)))  # deferred shapes resolved eagerly
    tr19 = gluon.Trainer(net18.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    try:
        with J():
            a11 = a10.sigmoid()
            nd.multi_sgd_mom_update(a11, a10, a14, a12, a13, a15, out=[a11, a12], lrs=(abs(7.5), abs(7.5), ), wds=(0.01, 0.01, ), momentum=0.9, num_weights=2)
            with autograd.record():
                a20 = net18(a11)
                a21 = (a20 * a20).mean()
            a21.backward()
            tr19.step(1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 405502, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
