"""minpy_jit fuzz reproducer: seed 11830, shrunk from 48 to 12 statements.

First difference (eager vs jit()): final[8][1][0][1][6]: value at (0, 0) is 0.09121938 (eager) vs 0.10120207 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed11830.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(11830)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 2,)), dtype='float32')
    net2 = gluon.nn.HybridSequential()
    net2.add(gluon.nn.Dense(5, activation='tanh'), gluon.nn.Dense(2))
    net2.initialize(mx.init.Uniform(0.5))
    net2(nd.zeros((1, 3, 2,)))  # deferred shapes resolved eagerly
    net7 = gluon.nn.Dense(5, in_units=2, activation=None)
    net7.initialize(mx.init.Uniform(0.5))
    net7(nd.zeros((1, 2,)))  # deferred shapes resolved eagerly
    net7.hybridize()
    tr8 = gluon.Trainer(net7.collect_params(), 'adam', {'learning_rate': 0.01})
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 3, 4,)), dtype='float32')
    try:
        with J():
            a4 = net2(a1)
            a6 = a4 ** 2
            with autograd.record():
                a9 = net7(a6)
                a10 = (a9 * a9).mean()
            a10.backward()
            tr8.step(1)
            a14 = nd.tile(a13, reps=(1, 2, 2, 2,))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 11830, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
