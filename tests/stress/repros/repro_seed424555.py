"""minpy_jit fuzz reproducer: seed 424555, shrunk from 46 to 9 statements.

First difference (eager vs jit()): final[2][2][6]: value at (0, 0, 0, 0) is 0.051843133 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed424555.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(424555)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 2, 3,)), dtype='float32')
    a5.attach_grad(grad_req='add')
    net11 = gluon.nn.Conv2D(3, kernel_size=1, in_channels=5)
    net11.initialize(mx.init.Uniform(0.5))
    net11(nd.zeros((1, 5, 2, 3,)))  # deferred shapes resolved eagerly
    net11.hybridize()
    tr12 = gluon.Trainer(net11.collect_params(), 'nag', {'learning_rate': 0.1, 'momentum': 0.5})
    try:
        with J():
            with autograd.record():
                a6 = nd.relu(a5)
                a8 = nd.elemwise_add(a6, a5)
                a13 = net11(a8)
                a14 = (a13 * a13).mean()
                a14.backward()
                tr12.step(1)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 424555, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
