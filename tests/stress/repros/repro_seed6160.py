"""minpy_jit fuzz reproducer: seed 6160, shrunk from 52 to 12 statements.

First difference (eager vs jit()): OBS: 1 items (eager) vs 0 (jit): [('left the scope', 'raised', 'MXNetError')] vs []

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed6160.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(6160)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a12.attach_grad()
    net27 = gluon.nn.Dense(2, in_units=1, activation='sigmoid')
    net27.initialize(mx.init.Uniform(0.5))
    net27(nd.zeros((1, 1,)))  # deferred shapes resolved eagerly
    net27.hybridize()
    tr28 = gluon.Trainer(net27.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record():
                a24 = nd.sigmoid(a12)
                a25 = nd.log(nd.abs(a24) + 0.5)
                a26 = nd.softmax(a25, axis=0)
            a24.backward()
            with autograd.record():
                a29 = net27(a26)
                a30 = (a29 * a29).mean()
            a30.backward()
            tr28.step(1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 6160, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
