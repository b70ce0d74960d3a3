"""minpy_jit fuzz reproducer: seed 412791, shrunk from 42 to 9 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed412791.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(412791)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a22.attach_grad()
    a30 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a30.attach_grad(grad_req='add')
    try:
        with J():
            with autograd.record():
                a23 = nd.exp(a22)
                a24 = nd.erf(a22)
                a28 = nd.elemwise_add(a22, a23)
                a31 = nd.concat(a3, a30, dim=0)
            autograd.backward([a28, a31])
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 412791, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
