"""minpy_jit fuzz reproducer: seed 308732, shrunk from 45 to 11 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed308732.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(308732)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float32')
    a2.attach_grad()
    net14 = gluon.nn.Dense(4, in_units=1, activation='relu')
    net14.initialize(mx.init.Uniform(0.5))
    net14(nd.zeros((5, 1,)))  # deferred shapes resolved eagerly
    try:
        with J():
            l4 = nd.split(a2, num_outputs=4, axis=1)
            a5 = l4[0]
            a6 = nd.broadcast_maximum(a5, a5)
            a8 = a6.reshape((5, -1,))
            a15 = net14(a8)
            with autograd.record():
                a24 = nd.relu(a2)
                a26 = nd.elemwise_add(a24, a15)
            a26.backward(retain_graph=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 308732, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
