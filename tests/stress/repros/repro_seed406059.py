"""minpy_jit fuzz reproducer: seed 406059, shrunk from 33 to 9 statements.

First difference (eager vs jit()): final[1][1][6]: value at (0, 0) is 1.717e-05 (eager) vs -5396.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed406059.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(406059)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 3,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float16')
    net17 = gluon.nn.LayerNorm(in_channels=3)
    net17.initialize(mx.init.Uniform(0.5))
    net17(nd.zeros((4, 3, 3,)))  # deferred shapes resolved eagerly
    net17.hybridize()
    tr18 = gluon.Trainer(net17.collect_params(), 'rmsprop', {'learning_rate': 0.01})
    try:
        with J():
            a10 = nd.sort(a9, axis=0)
            with autograd.record():
                a19 = net17(a1)
                a20 = (a19 * a19).mean()
            a20.backward()
            tr18.step(4)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 406059, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
