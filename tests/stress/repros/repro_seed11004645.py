"""minpy_jit fuzz reproducer: seed 11004645, shrunk from 34 to 32 statements.

First difference (eager vs jit()): final[1][1][6]: value at (1, 0) is 2.2711046 (eager) vs 1.8693109 (jit) [bit-exact required]

    PYTHONPATH=. .venv/bin/python tests/stress/repros/repro_seed11004645.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(11004645)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a5 = nd.array(RNG.uniform(0.0, 0.5, (3, 4,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (16, 1,)), dtype='float32')
    a11.attach_grad()
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a12.attach_grad()
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float64')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float64')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float64')
    a21.attach_grad()
    try:
        with J():
            a2 = (((nd.clip(nd.exp((nd.sigmoid(a1) * -1.5)), -3.0, 3.0) * a1) - 3.0) + 0.1)
            for it in range(5):
                a3 = ((((((a2 * S[it]) * -1.5) - a2) + S[it]) - 0.5) + -2.7)
                a4 = nd.tile(a3, reps=(2, 1,))
                nd.rmsprop_update(a3, a2, a5, lr=abs(-0.75), out=a3)
                with autograd.record():
                    a6 = nd.relu(a1)
                    a7 = nd.random.gamma(2.0, 1.5, shape=(3, 4,))
                    with autograd.pause():
                        l8 = nd.split(a2, num_outputs=3, axis=0)
                        a9 = l8[2]
                        try:
                            del a3
                        except Exception as e:
                            OBS.append(X(e))
                    a10 = nd.concat(a9, a5, a9, dim=0)
                    a14 = nd.FullyConnected(a11, a12, a13, num_hidden=1)
                    a15 = nd.FullyConnected(a11, a12, a13, num_hidden=1)
                    a16 = nd.tanh(a15) * 1.0
                    a17 = nd.FullyConnected(a11, a12, a13, num_hidden=1)
                    a18 = nd.tanh(a17) * 7.5
                try:
                    l23 = autograd.grad(a17, [a11])
                except Exception as e:
                    OBS.append(X(e))
                OBS.append(G(a12))
            a24 = nd.slice_axis(a6, axis=1, begin=0, end=2)
            a25 = -0.75 - a24
            a27 = nd.arange(0, 5)
            a28 = nd.full((4, 1, 2,), 1.0)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 11004645, exact=True, config={'fuse': False, 'segment_ops': 16, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
