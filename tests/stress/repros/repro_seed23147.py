"""minpy_jit fuzz reproducer: seed 23147, shrunk from 56 to 13 statements.

First difference (eager vs jit()): OBS: 2 items (eager) vs 1 (jit): [('py', array([[[[-1.1583234 ],
         [ 0.6504539 ],
         [ 0.7282477 ],
         [-1.3673422 ]],

        [[-0.93553156],
         [ 0.42837718],
         [-1.9107456 ],
         [ 1.109303  ] vs [('py', array([[[[-1.1583234 ],
         [ 0.6504539 ],
         [ 0.7282477 ],
         [-1.3673422 ]],

        [[-0.93553156],
         [ 0.42837718],
         [-1.9107456 ],
         [ 1.109303  ]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed23147.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(23147)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a4.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4, 4, 1,)), dtype='float32')
    net13 = gluon.nn.HybridSequential()
    net13.add(gluon.nn.Dense(3, activation='tanh'), gluon.nn.Dense(3))
    net13.initialize(mx.init.Uniform(0.5))
    net13(nd.zeros((4, 3,)))  # deferred shapes resolved eagerly
    net13.hybridize()
    try:
        with J():
            with autograd.record():
                a5 = nd.tanh(a4)
                OBS.append(R(a6.asnumpy()))
                a8 = a4 * 0.25
                a10 = nd.broadcast_mul(a3, a8)
            autograd.backward([a8, a5])
            with autograd.record(train_mode=False):
                a14 = net13(a10)
            a14.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 23147, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
