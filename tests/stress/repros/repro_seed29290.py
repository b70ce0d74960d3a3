"""minpy_jit fuzz reproducer: seed 29290, shrunk from 56 to 13 statements.

First difference (eager vs jit()): final[6][2][6]: value at (0, 0) is 2.4958556 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed29290.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(29290)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    a4.attach_grad(grad_req='add')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a9.attach_grad()
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    net12 = gluon.nn.Dense(5, in_units=3, activation='sigmoid')
    net12.initialize(mx.init.Uniform(0.5))
    net12(nd.zeros((2, 3,)))  # deferred shapes resolved eagerly
    tr13 = gluon.Trainer(net12.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record():
                a8 = nd.flip(a4, axis=1)
                a11 = nd.FullyConnected(a8, a9, a10, num_hidden=1)
            a11.backward(retain_graph=True)
            with autograd.record():
                a14 = net12(a8)
                a15 = (a14 * a14).mean()
            a15.backward()
            tr13.step(2)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 29290, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
