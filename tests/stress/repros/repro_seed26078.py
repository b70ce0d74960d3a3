"""minpy_jit fuzz reproducer: seed 26078, shrunk from 30 to 11 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 0 (jit): [('left the scope', 'raised', 'MXNetError')] vs []

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed26078.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(26078)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a4.attach_grad()
    net14 = gluon.nn.HybridSequential()
    net14.add(gluon.nn.Dense(5, activation='tanh'), gluon.nn.Dense(2))
    net14.initialize(mx.init.Uniform(0.5))
    net14(nd.zeros((1, 3,)))  # deferred shapes resolved eagerly
    tr16 = gluon.Trainer(net14.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    try:
        with J():
            with autograd.record():
                a5 = nd.sin(a4)
                a6 = (nd.clip(nd.abs(nd.softsign((nd.clip((a5 + 0.25), -3.0, 3.0) - 2.0))), -3.0, 3.0) - 0.0)
            l7 = autograd.grad(a5, [a4])
            with autograd.record():
                a17 = net14(a6)
                a18 = (a17 * a17).mean()
            a18.backward()
            tr16.step(1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 26078, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
