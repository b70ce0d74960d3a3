"""minpy_jit fuzz reproducer: seed 17956, shrunk from 40 to 14 statements.

First difference (eager vs jit()): final[7][1][0][2][6]: value at (0,) is 0.4999962 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed17956.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(17956)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4, 4,)), dtype='float32')
    a1.attach_grad()
    net2 = gluon.nn.BatchNorm(in_channels=4)
    net2.initialize(mx.init.Uniform(0.5))
    net2(nd.zeros((3, 4, 4,)))  # deferred shapes resolved eagerly
    tr3 = gluon.Trainer(net2.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            with autograd.record():
                a4 = net2(a1)
                a5 = (a4 * a4).mean()
            a5.backward()
            tr3.step(3)
            a7 = nd.Activation(a1, act_type='tanh')
            with autograd.record(train_mode=False):
                a9 = nd.sin(a1)
                a10 = nd.cast(a9, dtype='float64')
                nd.negative(a9, out=a7)
                a11 = net2(a7)
            a10.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 17956, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
