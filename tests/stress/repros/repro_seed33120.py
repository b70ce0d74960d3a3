"""minpy_jit fuzz reproducer: seed 33120, shrunk from 35 to 19 statements.

First difference (eager vs jit()): final[10][1][6]: value at (0, 0) is 0.06800613 (eager) vs -892.4629 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed33120.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(33120)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    net3 = gluon.nn.Dense(1, in_units=5, activation='sigmoid')
    net3.initialize(mx.init.Uniform(0.5))
    net3(nd.zeros((2, 5,)))  # deferred shapes resolved eagerly
    tr4 = gluon.Trainer(net3.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5,)), dtype='float32')
    try:
        with J():
            with autograd.record():
                a5 = net3(a1)
                a6 = (a5 * a5).mean()
            a6.backward()
            tr4.step(2)
            a7 = nd.clip(a5, -1.0, 1.0)
            a10 = nd.stack(a7, a7, axis=2)
            a11 = a10.astype('int32')
            a12 = nd.trunc(a5)
            for it in range(2):
                a13 = nd.broadcast_to(a10, shape=(2, 3, 2,))
                a14 = nd.random.shuffle(a13)
                a15 = nd.prod(a13, axis=0, keepdims=False)
                a16 = nd.tanh(a15)
            a21 = nd.tile(a14, reps=(2, 2, 2,))
            a24 = nd.log(nd.abs(a22) + 0.5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 33120, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
