"""minpy_jit fuzz reproducer: seed 1148047, shrunk from 39 to 10 statements.

First difference (eager vs jit()): final[5][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (2, 1), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[-1.1548400e-05],
       [ 1.1593103e-05]], dtype=float32)) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed1148047.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(1148047)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float32')
    a16.attach_grad(grad_req='add')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a17.attach_grad(grad_req='add')
    net24 = gluon.nn.BatchNorm(in_channels=4)
    net24.initialize(mx.init.Uniform(0.5))
    net24(nd.zeros((2, 4,)))  # deferred shapes resolved eagerly
    net24.hybridize()
    tr25 = gluon.Trainer(net24.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            a18 = nd.concat(a16, a16, a17, dim=1)
            with autograd.record():
                a26 = net24(a18)
                a27 = (a26 * a26).mean()
            a27.backward()
            tr25.step(2)
            a28 = nd.mean(a26, axis=1, keepdims=True)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 1148047, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
