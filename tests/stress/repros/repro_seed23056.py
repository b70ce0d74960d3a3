"""minpy_jit fuzz reproducer: seed 23056, shrunk from 44 to 9 statements.

First difference (eager vs jit()): final[5][1][1][1][6]: value at (0,) is 4.690062e-05 (eager) vs 0.00023018481 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed23056.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(23056)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (5, 3,)), dtype='float32')
    a7.attach_grad(grad_req='add')
    net17 = gluon.nn.BatchNorm(in_channels=3)
    net17.initialize(mx.init.Uniform(0.5))
    net17(nd.zeros((5, 3,)))  # deferred shapes resolved eagerly
    tr18 = gluon.Trainer(net17.collect_params(), 'adam', {'learning_rate': 0.01})
    try:
        with J():
            a15 = nd.tanh(a7)
            a16 = a15 + 0.5
            with autograd.record():
                a19 = net17(a16)
                a20 = (a19 * a19).mean()
            a20.backward()
            tr18.step(5)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 23056, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
