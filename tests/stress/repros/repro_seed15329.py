"""minpy_jit fuzz reproducer: seed 15329, shrunk from 52 to 12 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 0 (jit): [('left the scope', 'raised', 'MXNetError')] vs []

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed15329.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(15329)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a5.attach_grad()
    net27 = gluon.nn.LayerNorm(in_channels=4)
    net27.initialize(mx.init.Uniform(0.5))
    net27(nd.zeros((1, 4,)))  # deferred shapes resolved eagerly
    net27.hybridize()
    tr28 = gluon.Trainer(net27.collect_params(), 'sgd', {'learning_rate': 0.05, 'wd': 0.01})
    try:
        with J():
            with autograd.record():
                a6 = nd.sin(a5)
                a12 = nd.zeros_like(a6)
                a13 = a12 * -0.75
            a12.backward()
            with autograd.record():
                a29 = net27(a13)
                a30 = (a29 * a29).mean()
            a30.backward()
            tr28.step(1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 15329, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
