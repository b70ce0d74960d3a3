"""minpy_jit fuzz history reproducer: seed 3026280 after 1 of the 9276 programs its worker ran
before it (seeds 3025023), shrunk to 15 + 19 statements.

First difference (eager vs jit()): final[1][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (5, 1), "<class 'numpy.float64'>", 'cpu(0)', 'default', array([[ 0.68946059],
       [-1.34721702],
       [ 1.8150969 ],
       [-1.5036622 ],
       [-1.55989934]])) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed3026280.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (3025023, False, {'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(3025023)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    net3 = gluon.nn.Dense(1, in_units=1, activation=None)
    net3.initialize(mx.init.Uniform(0.5))
    net3(nd.zeros((1, 1,)))  # deferred shapes resolved eagerly
    net3.hybridize()
    tr4 = gluon.Trainer(net3.collect_params(), 'adam', {'learning_rate': 0.01})
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float32')
    a8.attach_grad()
    try:
        with J():
            with autograd.record():
                a5 = net3(a1)
                a6 = (a5 * a5).mean()
            try:
                a6.backward()
                tr4.step(1)
            except Exception as e:
                OBS.append(X(e))
            OBS.append(R(a1.asscalar()))
            a7 = a6.sign()
            with autograd.record():
                a9 = nd.exp(a8)
                a10 = nd.reshape(a6, shape=(-1,))
            try:
                l11 = autograd.grad(a9, [a8])
            except Exception as e:
                OBS.append(X(e))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()
"""),
    (3026280, False, {'fuse': True, 'segment_ops': 4, 'async_launch': True, 'max_ops': 7},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(3026280)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float16')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a8.attach_grad()
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float64')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float64')
    a12 = nd.array(RNG.uniform(0.0, 0.5, (5, 1,)), dtype='float64')
    a13 = nd.array(RNG.uniform(0.0, 0.5, (5, 1,)), dtype='float64')
    try:
        with J():
            a2 = (a1 > -1.5)
            a4 = a3.relu()
            a5 = nd.relu(a4)
            a7 = nd.sort(a6, axis=1)
            a7[1:3] = 3.3333333333333335
            with autograd.record():
                a9 = nd.tanh(a8)
                nd.adam_update(a10, a11, a12, a13, lr=abs(1e-3), wd=0.01, out=a10)
                try:
                    a11 /= 0.5
                except Exception as e:
                    OBS.append(X(e))
            try:
                a9.backward()
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a8))
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
