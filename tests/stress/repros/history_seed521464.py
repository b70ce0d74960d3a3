"""minpy_jit fuzz history reproducer: seed 521464 after 1 of the 1786 programs its worker ran
before it (seeds 521400), shrunk to 30 + 34 statements.

First difference (eager vs jit()): OBS[2][1]: 2.913661672645244 (eager) vs 2.9136616726452433 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed521464.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (521400, False, {'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(521400)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 1,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 4,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a3.attach_grad(grad_req='add')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a5.attach_grad()
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3, 1,)), dtype='float16')
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 3, 6,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 2, 2,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a14.attach_grad()
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a17.attach_grad()
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 3, 6,)), dtype='float32')
    a20 = nd.array(RNG.uniform(0.0, 0.5, (1, 1, 3, 6,)), dtype='float32')
    a21 = nd.array(RNG.uniform(0.0, 0.5, (1, 1, 3, 6,)), dtype='float32')
    try:
        with J():
            for it in range(12):
                OBS.append(R(a2.sum().asscalar()))
                a4 = nd.random.normal(0, 2, shape=(2, 1,))
                with autograd.record():
                    a6 = nd.sin(a5)
                    try:
                        del a4
                    except Exception as e:
                        OBS.append(X(e))
                    a7 = (nd.exp(nd.abs(((nd.negative(a1) - 2.0) * 0.25))) * a1)
                a8 = a7.relu()
                l10 = nd.split(a9, num_outputs=3, axis=1, squeeze_axis=True)
                a11 = l10[2]
                a15 = nd.Convolution(a12, a13, a14, kernel=(2, 2), pad=(1, 1), num_filter=1)
            a16 = nd.sigmoid(nd.sigmoid(((nd.square((a13 - 0.25)) + -0.75) + a13)))
            with autograd.record():
                a18 = nd.tanh(a17)
                try:
                    del a6
                except Exception as e:
                    OBS.append(X(e))
                nd.adam_update(a12, a19, a20, a21, lr=abs(0.5), wd=0.0, out=a12)
            try:
                a18.backward(retain_graph=True)
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a17))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()
"""),
    (521464, True, {'fuse': False, 'segment_ops': 4, 'async_launch': False, 'max_ops': 7},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(521464)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5, 3, 1,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2, 2,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2, 3,)), dtype='float32')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 4,)), dtype='float64')
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 4,)), dtype='float64')
    a13 = nd.array(RNG.uniform(0.0, 0.5, (3, 1, 4,)), dtype='float64')
    a14 = nd.array(RNG.uniform(0.0, 0.5, (3, 1, 4,)), dtype='float64')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1,)), dtype='float32')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    net22 = gluon.nn.Dense(5, in_units=1, activation='relu')
    net22.initialize(mx.init.Uniform(0.5))
    net22(nd.zeros((3, 1,)))  # deferred shapes resolved eagerly
    tr23 = gluon.Trainer(net22.collect_params(), 'sgd', {'learning_rate': 0.1})
    a26 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a26.attach_grad()
    try:
        with J():
            a3 = (nd.square(nd.relu(nd.clip((a2 + 1.0), -3.0, 3.0))) + -0.75)
            a5 = nd.stack(a3, a3, axis=0)
            a6 = nd.random.poisson(3.0, shape=(3, 1,))
            a9 = nd.broadcast_maximum(a7, a8)
            OBS.append(R(a4))
            OBS.append(P(a9))
            a10 = a5[1:2]
            nd.adam_update(a11, a12, a13, a14, lr=abs(1.0), wd=0.01, out=a11)
            a15 = a5[0:1]
            OBS.append(R(a14.sum().asscalar()))
            a16 = nd.norm(a15, axis=3, keepdims=False)
            a17 = nd.norm(a1, axis=1, keepdims=False)
            a19 = nd.norm(a18, axis=0, keepdims=False)
            FLUSH()
            a20 = nd.array(RNG.uniform(-1, 1, (3, 5, 5, 1,)))
            with autograd.record():
                a24 = net22(a21)
                a25 = (a24 * a24).mean()
            try:
                a25.backward()
                tr23.step(3)
            except Exception as e:
                OBS.append(X(e))
            a27 = nd.concat(a25, a26, dim=0)
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
