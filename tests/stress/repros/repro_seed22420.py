"""minpy_jit fuzz reproducer: seed 22420, shrunk from 37 to 7 statements.

First difference (eager vs jit()): final[4][1][6]: value at (0,) is 0.10514411 (eager) vs -0.19505562 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed22420.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(22420)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 4,)), dtype='float32')
    net20 = gluon.nn.Dense(1, in_units=4, activation='sigmoid')
    net20.initialize(mx.init.Uniform(0.5))
    net20(nd.zeros((3, 1, 4,)))  # deferred shapes resolved eagerly
    a26 = nd.array(RNG.uniform(0.0, 0.5, (1,)), dtype='float32')
    try:
        with J():
            a22 = net20(a19)
            a23 = (a22 * a22).mean()
            a25 = a23.reshape((-1,))
            nd.nag_mom_update(a23, a25, a26, lr=abs(-0.75), momentum=0.9, out=a23)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 22420, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
