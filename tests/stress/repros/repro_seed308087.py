"""minpy_jit fuzz reproducer: seed 308087, shrunk from 62 to 13 statements.

First difference (eager vs jit()): OBS: 2 items (eager) vs 1 (jit): [('raised', 'MXNetError'), ('left the scope', 'raised', 'MXNetError')] vs [('raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed308087.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(308087)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a2.attach_grad(grad_req='add')
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a27 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float64')
    net29 = gluon.nn.Dense(2, in_units=1, activation='relu')
    net29.initialize(mx.init.Uniform(0.5))
    net29(nd.zeros((1, 1,)))  # deferred shapes resolved eagerly
    tr30 = gluon.Trainer(net29.collect_params(), 'nag', {'learning_rate': 0.1, 'momentum': 0.5})
    try:
        with J():
            with autograd.record():
                a24 = nd.relu(a2)
                a26 = nd.broadcast_mul(a24, a25)
                a28 = nd.slice(a27, begin=(1,), end=(2,))
                a31 = net29(a25)
                a32 = (a31 * a31).mean()
                try:
                    a32.backward()
                    tr30.step(1)
                except Exception as e:
                    OBS.append(X(e))
            a26.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 308087, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
