"""minpy_jit fuzz reproducer: seed 410191, shrunk from 37 to 10 statements.

First difference (eager vs jit()): final[0][1]: 2 items (eager) vs 7 (jit): ('raised', 'MXNetError') vs ('array', 'NDArray', (4, 1), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[-1.7787923],
       [ 3.9001288],
       [ 4.758753 ],
       [ 2.415225 ]], dtype=float32))

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed410191.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(410191)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float16')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a7.attach_grad()
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a8.attach_grad()
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a9.attach_grad()
    try:
        with J():
            for it in range(12):
                with autograd.record():
                    a5 = nd.slice_axis(a4, axis=1, begin=2, end=3)
                    a10 = nd.FullyConnected(a7, a8, a9, num_hidden=1)
                    a11 = a9 * S[it]
                a19 = nd.sort(a5, axis=1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 410191, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
