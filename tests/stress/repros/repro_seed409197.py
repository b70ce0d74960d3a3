"""minpy_jit fuzz reproducer: seed 409197, shrunk from 36 to 26 statements.

First difference (eager vs jit()): final[10][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (1,), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([-0.4491001], dtype=float32)) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed409197.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(409197)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 2,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a3.attach_grad(grad_req='add')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 4, 5,)), dtype='float32')
    a9 = nd.array(RNG.randint(0, 5, (3,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 3,)), dtype='float32')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float16')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1, 5,)), dtype='float32')
    a21.attach_grad()
    try:
        with J():
            a6 = nd.Pooling(a5, kernel=(2, 2), stride=(2, 2), pool_type='max')
            try:
                with autograd.record():
                    a8 = nd.sigmoid(a1)
                    try:
                        with J():
                            a10 = nd.one_hot(a9, depth=5)
                            for it in range(2):
                                a12 = nd.mean(a1)
                                with autograd.pause():
                                    pass
                                a17 = nd.softmax(a9, axis=0)
                                a19 = nd.sort(a18, axis=1)
                        a20 = nd.where(a12 > 0, a12, a12)
                        a22 = nd.ceil(a21)
                        raise Boom('mid-block')
                    except Boom as e:
                        OBS.append(X(e))
                try:
                    a22.backward(retain_graph=True)
                except Exception as e:
                    OBS.append(X(e))
                OBS.append(G(a21))
                raise Boom('mid-block')
            except Boom as e:
                OBS.append(X(e))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 409197, exact=False, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
