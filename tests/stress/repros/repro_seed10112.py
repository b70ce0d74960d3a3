"""minpy_jit fuzz reproducer: seed 10112, shrunk from 31 to 12 statements.

First difference (eager vs jit()): OBS[0][2]: 'MXNetError' (eager) vs 'NameError' (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed10112.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(10112)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a2.attach_grad()
    a16 = nd.array(RNG.uniform(0.0, 0.5, (3, 1,)), dtype='float32')
    try:
        with J():
            with autograd.record(train_mode=False):
                a3 = nd.sigmoid(a2)
                a4 = a1 - a3
                a5 = nd.flatten(a1)
            a3.backward()
            a8 = nd.flip(a5, axis=0)
            with autograd.record():
                nd.nag_mom_update(a8, a1, a16, lr=0.1, momentum=0.9, out=a8)
                nd.sgd_mom_update(a12, a17, a18, lr=abs(-1.5), momentum=0.9, wd=0.0, out=a12)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 10112, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
