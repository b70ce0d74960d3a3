"""minpy_jit fuzz reproducer: seed 1692, shrunk from 48 to 11 statements.

First difference (eager vs jit()): OBS[0][2]: 'MXNetError' (eager) vs 'NameError' (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1692.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1692)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a5.attach_grad()
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    net13 = gluon.nn.LayerNorm(in_channels=5)
    net13.initialize(mx.init.Uniform(0.5))
    net13(nd.zeros((3, 5,)))  # deferred shapes resolved eagerly
    try:
        with J():
            with autograd.record(train_mode=False):
                a8 = nd.sin(a5)
                a10 = nd.broadcast_add(a8, a9)
            l11 = autograd.grad(a8, [a5])
            with autograd.record():
                a15 = net13(a10)
                a16 = (a15 * a15).mean()
            a16.backward()
            tr14.step(3)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1692, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
