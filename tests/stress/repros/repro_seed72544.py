"""minpy_jit fuzz reproducer: seed 72544, shrunk from 49 to 9 statements.

First difference (eager vs jit()): final[4][1][0][2][6]: value at (0, 0) is 0.1526087 (eager) vs -8.101704 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed72544.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(72544)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    net9 = gluon.nn.Dense(4, in_units=3, activation='sigmoid')
    net9.initialize(mx.init.Uniform(0.5))
    net9(nd.zeros((4, 3,)))  # deferred shapes resolved eagerly
    try:
        with J():
            a5 = nd.arctan(a3)
            with autograd.record(train_mode=False):
                a7 = a5 + 1e-3
                a10 = net9(a7)
                FLUSH()
                try:
                    a10 *= 7.5
                except Exception as e:
                    OBS.append(X(e))
            a10.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 72544, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
