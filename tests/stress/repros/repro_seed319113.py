"""minpy_jit fuzz reproducer: seed 319113, shrunk from 31 to 12 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 0 (jit): [('left the scope', 'raised', 'MXNetError')] vs []

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed319113.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(319113)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    net5 = gluon.nn.HybridSequential()
    net5.add(gluon.nn.Dense(2, activation='tanh'), gluon.nn.Dense(3))
    net5.initialize(mx.init.Uniform(0.5))
    net5(nd.zeros((1, 4,)))  # deferred shapes resolved eagerly
    tr15 = gluon.Trainer(net5.collect_params(), 'sgd', {'learning_rate': 0.05, 'wd': 0.01})
    try:
        with J():
            a9 = nd.tanh(nd.softsign(nd.relu((a1 + 1.0))))
            with autograd.record(train_mode=False):
                a13 = net5(a9)
                with autograd.pause():
                    with autograd.record():
                        a16 = net5(a9)
                        a17 = (a16 * a16).mean()
                    a17.backward()
                    tr15.step(1)
            a13.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 319113, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
