"""minpy_jit fuzz reproducer: seed 21081, shrunk from 34 to 10 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 0 (jit): [('left the scope', 'raised', 'MXNetError')] vs []

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed21081.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(21081)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float32')
    a6.attach_grad(grad_req='add')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    net11 = gluon.nn.Dense(4, in_units=1, activation='relu')
    net11.initialize(mx.init.Uniform(0.5))
    net11(nd.zeros((2, 1,)))  # deferred shapes resolved eagerly
    try:
        with J():
            with autograd.record(train_mode=False):
                a7 = nd.exp(a6)
                a9 = nd.broadcast_power(a8, a7)
            a7.backward()
            with autograd.record():
                a12 = net11(a9)
            a12.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 21081, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
