"""minpy_jit fuzz reproducer: seed 11004645 (repro_seed11004645.py), reduced by hand to 13 statements.

A concat reads a5, which the rmsprop_update of the same loop iteration mutated in place (its
state n) in an earlier flush; under jit() it sometimes saw a5 one or two updates behind, until
126f4dc (the state had been bound as a CachedOp parameter). Timing: it showed under load, e.g.
with `yes > /dev/null &` beside it (12-17 of 24 runs differed; idle, 0 of 48; now 0 of 24):

    PYTHONPATH=. .venv/bin/python tests/stress/repros/loop_repro.py tests/stress/repros/repro_seed11004645_min.py 24
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
    try:
        with J():
            a2 = (((nd.clip(nd.exp((nd.sigmoid(a1) * -1.5)), -3.0, 3.0) * a1) - 3.0) + 0.1)
            for it in range(5):
                a3 = ((((((a2 * 0.1) * -1.5) - a2) + 0.1) - 0.5) + -2.7)
                nd.rmsprop_update(a3, a2, a5, lr=abs(-0.75), out=a3)
                with autograd.record():
                    a6 = nd.relu(a1)
                    with autograd.pause():
                        l8 = nd.split(a2, num_outputs=3, axis=0)
                        a9 = l8[2]
                    a10 = nd.concat(a9, a5, a9, dim=0)
            a24 = nd.slice_axis(a6, axis=1, begin=0, end=2)
            a25 = -0.75 - a24
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 11004645, exact=True, config={'fuse': False, 'segment_ops': 16, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
