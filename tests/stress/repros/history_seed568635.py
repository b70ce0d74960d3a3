"""minpy_jit fuzz history reproducer: seed 568635 after 1 of the 400 programs its worker ran
before it (seeds 568300), shrunk to 14 + 29 statements.

First difference (eager vs jit()): OBS[3][0]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (1, 4), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[1.4797735 , 0.36495158, 0.4997648 , 0.6526509 ]], dtype=float32)) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed568635.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (568300, False, {'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(568300)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float32')
    net2 = gluon.nn.Dense(5, in_units=1, activation='sigmoid')
    net2.initialize(mx.init.Uniform(0.5))
    net2(nd.zeros((5, 1,)))  # deferred shapes resolved eagerly
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 5,)), dtype='float64')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3, 5,)), dtype='float64')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float32')
    a9.attach_grad()
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float32')
    net14 = gluon.nn.BatchNorm(in_channels=1)
    net14.initialize(mx.init.Uniform(0.5))
    net14(nd.zeros((5, 1,)))  # deferred shapes resolved eagerly
    a16 = nd.array(RNG.randint(0, 3, (1,)), dtype='float32')
    net18 = gluon.nn.BatchNorm(in_channels=5)
    net18.initialize(mx.init.Uniform(0.5))
    net18(nd.zeros((5, 5,)))  # deferred shapes resolved eagerly
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a21.attach_grad()
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    try:
        with J():
            nd.sgd_update(a6, a7, lr=abs(-0.75), wd=0.01, out=a6)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()
"""),
    (568635, False, {'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(568635)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2, 4,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 4, 4,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 1,)), dtype='float64')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float64')
    a4.attach_grad()
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float64')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 8, 8,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a11.attach_grad()
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a16.attach_grad()
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2,)), dtype='float32')
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4,)), dtype='float32')
    a27 = nd.array(RNG.randint(0, 3, (1,)), dtype='float32')
    a29 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    net31 = gluon.nn.LayerNorm(in_channels=4)
    net31.initialize(mx.init.Uniform(0.5))
    net31(nd.zeros((3, 2, 4,)))  # deferred shapes resolved eagerly
    a33 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float16')
    a33.attach_grad()
    try:
        with J():
            a6 = nd.dot(a4, a5, transpose_b=True)
            a7 = a2.relu()
            OBS.append(R(a7.sum().asscalar()))
            a8 = nd.random.uniform_like(a2, low=0, high=2.5)
            a9 = nd.tile(a8, reps=(2, 2, 2, 2,))
            OBS.append(R(a6))
            nd.sgd_update(a9, a10, lr=abs(0.25), wd=0.01, out=a9)
            with autograd.record(train_mode=False):
                a17 = nd.dot(a15, a16)
                a23 = a22 % 1.5
                l25 = nd.split(a23, num_outputs=2, axis=0)
            a28 = nd.pick(a17, a27, axis=1)
            OBS.append(P(a28))
            OBS.append(R(l25))
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
