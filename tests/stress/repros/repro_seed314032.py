"""minpy_jit fuzz reproducer: seed 314032, shrunk from 42 to 12 statements.

First difference (eager vs jit()): OBS: 2 items (eager) vs 1 (jit): [('raised', 'MXNetError'), ('left the scope', 'raised', 'MXNetError')] vs [('raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed314032.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(314032)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 5,)), dtype='float32')
    a8.attach_grad()
    a14 = nd.array(RNG.randint(0, 5, (2, 3,)), dtype='float32')
    net19 = gluon.nn.Dense(5, in_units=3, activation=None)
    net19.initialize(mx.init.Uniform(0.5))
    net19(nd.zeros((2, 3,)))  # deferred shapes resolved eagerly
    tr20 = gluon.Trainer(net19.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record(train_mode=False):
                a15 = nd.pick(a8, a14, axis=2)
                a18 = nd.Activation(a15, act_type='softsign')
                with autograd.record():
                    a21 = net19(a14)
                    a22 = (a21 * a21).mean()
                try:
                    a22.backward()
                    tr20.step(2)
                except Exception as e:
                    OBS.append(X(e))
            l26 = autograd.grad(a18, [a8])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 314032, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
