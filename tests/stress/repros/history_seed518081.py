"""minpy_jit fuzz history reproducer: seed 518081 after 0 of the 2134 programs its worker ran
before it (seeds none), shrunk to 38 statements.

First difference (eager vs jit()): final[28][1][0][6]: value at (1, 0, 0, 0) is -0.069284394 (eager) vs -0.07081447 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed518081.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (518081, False, {'fuse': True, 'segment_ops': 64, 'async_launch': False, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(518081)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 3, 3,)), dtype='float32')
    net5 = gluon.nn.Dense(1, in_units=5, activation='sigmoid')
    net5.initialize(mx.init.Uniform(0.5))
    net5(nd.zeros((4, 5,)))  # deferred shapes resolved eagerly
    a7 = nd.array(RNG.randint(0, 3, (2, 4, 3,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (5, 5, 5, 2,)), dtype='float32')
    a10.attach_grad()
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5, 5, 2,)), dtype='float32')
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2, 3, 6,)), dtype='float32')
    a15.attach_grad()
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2, 3, 3,)), dtype='float32')
    a16.attach_grad()
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float32')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 2,)), dtype='float32')
    a23 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3,)), dtype='float32')
    a23.attach_grad()
    a29 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 3,)), dtype='float64')
    a30 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float64')
    a30.attach_grad()
    a31 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float64')
    try:
        with J():
            a3 = nd.ones_like(a1)
            a4 = a3.abs()
            a6 = net5(a3)
            a8 = nd.pick(a2, a7, axis=3)
            with autograd.record():
                a9 = nd.relu(a1)
                try:
                    nd.elemwise_add(a9, a3, out=a9)
                except Exception as e:
                    OBS.append(X(e))
                a11 = (nd.clip(((nd.clip((nd.clip(nd.sigmoid(nd.tanh(a10)), -3.0, 3.0) * 0.25), -3.0, 3.0) - 1e-3) * -0.75), -3.0, 3.0) * a10)
                try:
                    del a3
                except Exception as e:
                    OBS.append(X(e))
                for it in range(3):
                    try:
                        a10[1:4] = a12
                    except Exception as e:
                        OBS.append(X(e))
                    a13 = a8.T
            try:
                l14 = autograd.grad(a11, [a10])
            except Exception as e:
                OBS.append(X(e))
            a18 = nd.Convolution(a15, a16, a17, kernel=(3, 3), pad=(0, 0), num_filter=3)
            OBS.append(R(a18))
            a20 = nd.Activation(a19, act_type='tanh')
            a22 = a21 * -1.5
            a24 = a23 ** 2
            a25 = nd.clip((((nd.negative((a24 + a24)) * 1.0) - a23) - a24), -3.0, 3.0)
            l26 = nd.split(a10, num_outputs=5, axis=2)
            a27 = l26[3]
            a28 = nd.cos(a27)
            a32 = nd.dot(a30, a31)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()
"""),
]


def compile_program(src, filename='fuzzprog.py'):
    """program(J, FLUSH, OBS) from its text; every program's `with J():` site is in the same
    file, as in the fuzzer's worker, so one program's jit() state is seen by the next."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = dict(globals())
    exec(compile(src, filename, 'exec'), ns)
    return ns['program']


if __name__ == '__main__':
    for seed, exact, config, src in PROGRAMS[:-1]:
        print('prior seed %d: %s' % (seed, compare_runs(compile_program(src), seed, exact=exact, config=config)
                                     or 'eager and jit() agree'))
    seed, exact, config, src = PROGRAMS[-1]
    difference = compare_runs(compile_program(src), seed, exact=exact, config=config)
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
