"""minpy_jit fuzz history reproducer: seed 518277 after 0 of the 25 programs its worker ran
before it (seeds none), shrunk to 20 statements.

First difference (eager vs jit()): OBS: 0 items (eager) vs 1 (jit): [] vs [('left the scope', 'raised', 'MXNetError')]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed518277.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (518277, False, {'fuse': True, 'segment_ops': 4, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(518277)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5, 3,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4,)), dtype='float32')
    a4 = nd.array(RNG.uniform(0.0, 0.5, (2, 4,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a5.attach_grad()
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5, 5, 2,)), dtype='float32')
    a17 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float64')
    net19 = gluon.nn.Dense(1, in_units=10, activation='relu')
    net19.initialize(mx.init.Uniform(0.5))
    net19(nd.zeros((1, 5, 2, 1,)))  # deferred shapes resolved eagerly
    tr20 = gluon.Trainer(net19.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    a25.attach_grad()
    a29 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a32 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float32')
    try:
        with J():
            nd.rmsprop_update(a1, a3, a4, lr=abs(1e-3), out=a1)
            with autograd.record():
                a6 = nd.exp(a5)
                a7 = (nd.softsign(nd.exp((nd.clip((nd.exp((a5 + 0.0)) * 0.0), -3.0, 3.0) + 1.0))) - -1.5)
                a8 = nd.Dropout(a5, p=0.5)
                a9 = nd.random.shuffle(a6)
                a10 = nd.random.uniform_like(a9, low=0, high=2.5)
            a10.backward(retain_graph=True)
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
