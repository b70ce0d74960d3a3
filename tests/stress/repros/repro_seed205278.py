"""minpy_jit fuzz reproducer: seed 205278, shrunk from 30 to 30 statements.

First difference (eager vs jit()): OBS[1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (3, 2), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[0.10774755, 0.8529891 ],
       [0.27111703, 0.13613194],
       [0.09549463, 0.8350237 ]], dtype=float32)) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed205278.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(205278)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a3.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4,)), dtype='float32')
    a11.attach_grad()
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float16')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    try:
        with J():
            a2 = nd.square(nd.square(((((nd.exp((a1 - -0.75)) + 0.5) - a1) * 2.0) + 0.0)))
            a4 = nd.stack(a1, a1, axis=0)
            a5 = nd.prod(a4, axis=0, keepdims=True)
            a8 = nd.concat(a3, a6, a7, dim=1)
            a9 = a6[2:3]
            a10 = nd.broadcast_add(a9, a9)
            a2 += a1
            FLUSH()
            a13 = nd.concat(a11, a12, dim=0)
            try:
                a11 *= 0.0
            except Exception as e:
                OBS.append(X(e))
            with autograd.record(train_mode=False):
                a14 = nd.tanh(a3)
                a15 = nd.where(a12 > 0, a12, a12)
                a16 = nd.norm(a12)
                a18 = nd.argsort(a17, axis=0)
                with autograd.pause():
                    try:
                        a18 -= a17
                    except Exception as e:
                        OBS.append(X(e))
                    a20 = nd.random.shuffle(a19)
                a21 = a20 - a16
            try:
                a14.backward()
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a3))
            a7[2:3] = 7.5
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 205278, exact=False, config={'fuse': True, 'segment_ops': 16, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
