"""minpy_jit fuzz reproducer: seed 14670, shrunk from 45 to 11 statements.

First difference (eager vs jit()): OBS[0][2]: 'MXNetError' (eager) vs 'NameError' (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed14670.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(14670)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    a2.attach_grad(grad_req='add')
    net16 = gluon.nn.Dense(5, in_units=1, activation='sigmoid')
    net16.initialize(mx.init.Uniform(0.5))
    net16(nd.zeros((3, 1,)))  # deferred shapes resolved eagerly
    try:
        with J():
            with autograd.record():
                a3 = nd.sigmoid(a2)
                a4 = nd.sin(a3)
                a5 = nd.topk(a4, axis=1, k=1, ret_typ='value')
            a4.backward()
            with autograd.record():
                a18 = net16(a5)
                a19 = (a18 * a18).mean()
                a19.backward()
                tr17.step(3)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 14670, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
