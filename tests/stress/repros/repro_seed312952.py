"""minpy_jit fuzz reproducer: seed 312952, shrunk from 28 to 8 statements.

First difference (eager vs jit()): final[6][1][0][6]: value at (0,) is 52495875000000.0 (eager) vs 52447385000000.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed312952.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(312952)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a15.attach_grad()
    try:
        with J():
            with autograd.record():
                a16 = nd.FullyConnected(a6, a14, a15, num_hidden=4)
                l17 = nd.split(a16, num_outputs=4, axis=1, squeeze_axis=True)
                a18 = l17[3]
            l19 = autograd.grad(a18, [a15])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 312952, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
