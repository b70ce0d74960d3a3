"""minpy_jit fuzz history reproducer: seed 617020 after 0 of the 11213 programs its worker ran
before it (seeds none), shrunk to 34 statements.

First difference (eager vs jit()): OBS[3][6]: value at (0, 0, 0, 0) is -0.39830077 (eager) vs 0.0 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed617020.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (617020, False, {'fuse': True, 'segment_ops': 0, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(617020)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 4, 5,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 2, 5,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1, 1,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1,)), dtype='float32')
    a5.attach_grad()
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5, 4, 5,)), dtype='float32')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2, 4,)), dtype='float32')
    a18.attach_grad()
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4, 3,)), dtype='float32')
    a19.attach_grad()
    try:
        with J():
            a6 = a5 - a4
            a7 = nd.slice_axis(a6, axis=1, begin=0, end=1)
            a8 = nd.log2(nd.abs(a3) + 0.5)
            a9 = nd.array(RNG.uniform(-1, 1, (3, 4, 2,)))
            a9[1:2] = 0.25
            FLUSH()
            with autograd.record(train_mode=False):
                a10 = nd.tanh(a1)
                mx.random.seed(10)
                try:
                    a9[:] = 1e-3
                except Exception as e:
                    OBS.append(X(e))
                a12 = nd.relu(((nd.abs((nd.relu((nd.tanh(nd.softsign(a10)) - 0.25)) * a1)) * -1.5) - a11))
                OBS.append(P(a12))
                try:
                    a12[:] = a12 * 2 + 1
                except Exception as e:
                    OBS.append(X(e))
                OBS.append(R(a12.sum().asscalar()))
            try:
                a12.backward(retain_graph=True)
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a1))
            a13 = nd.Activation(a11, act_type='tanh')
            for it in range(5):
                nd.waitall()
            a14 = 7.5 - a13
            a15 = a9 % 1.5
            a16 = nd.sort(a15, axis=1)
            a17 = nd.max(a16, axis=1, keepdims=False)
            a16.wait_to_read()
            a20 = nd.batch_dot(a18, a19)
            try:
                a21 = a17.copyto(mx.cpu_pinned(0))
                a21 += 1
            except Exception as e:
                OBS.append(X(e))
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
