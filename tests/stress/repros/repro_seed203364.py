"""minpy_jit fuzz reproducer: seed 203364, shrunk from 37 to 18 statements.

First difference (eager vs jit()): final[5][1][6]: value at (0, 0) is 0.5919849 (eager) vs 0.56420535 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed203364.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(203364)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 5,)), dtype='float32')
    a4 = nd.array(RNG.uniform(0.0, 0.5, (5, 2, 2,)), dtype='float32')
    net8 = gluon.nn.LayerNorm(in_channels=2)
    net8.initialize(mx.init.Uniform(0.5))
    net8(nd.zeros((5, 2, 2,)))  # deferred shapes resolved eagerly
    net8.hybridize()
    a11 = nd.array(RNG.randint(0, 5, (1,)), dtype='float32')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a18 = nd.array(RNG.uniform(0.0, 0.5, (5, 2, 2,)), dtype='float32')
    a19 = nd.array(RNG.uniform(0.0, 0.5, (1,)), dtype='float32')
    a20 = nd.array(RNG.uniform(0.0, 0.5, (2, 2,)), dtype='float32')
    try:
        with J():
            a2 = a1.T
            a3 = a2 - 2.0
            a5 = nd.cast(a4, dtype='float32')
            a7 = (a5 == -1.5)
            a9 = net8(a7)
            a13 = a3[3]
            a14 = a11 + a11
            for it in range(2):
                nd.multi_sgd_mom_update(a3, a9, a18, a16, a14, a19, a17, a13, a20, out=[a3, a16, a17], lrs=(abs(S[it]), abs(S[it]), abs(S[it]), ), wds=(0.01, 0.01, 0.01, ), momentum=0.9, num_weights=3)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 203364, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
