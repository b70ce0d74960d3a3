"""minpy_jit fuzz history reproducer: seed 629158 after 0 of the 10030 programs its worker ran
before it (seeds none), shrunk to 32 statements.

First difference (eager vs jit()): final[20][2][6]: value at (0, 3) is -0.0 (eager) vs -0.006615165 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed629158.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (629158, False, {'fuse': True, 'segment_ops': 16, 'async_launch': True, 'max_ops': 7},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(629158)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a2.attach_grad()
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float32')
    a3.attach_grad()
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float32')
    a9.attach_grad()
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a15.attach_grad()
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (3, 3,)), dtype='float32')
    try:
        with J():
            try:
                a2[1:2] = a4
            except Exception as e:
                OBS.append(X(e))
            with autograd.record():
                a5 = nd.sigmoid(a3)
                a7 = a4 - a6
                a8 = nd.minimum(a3, 7.5)
            try:
                a5.backward()
            except Exception as e:
                OBS.append(X(e))
            with autograd.record():
                a10 = nd.sin(a3)
                l11 = nd.split(a9, num_outputs=2, axis=1)
                a12 = l11[0]
                try:
                    a8 += a8
                except Exception as e:
                    OBS.append(X(e))
                a13 = a12[1]
                a14 = nd.relu(nd.sigmoid(nd.tanh(nd.abs(((a9 * 2.0) - 0.0)))))
                mx.random.seed(27)
                try:
                    a14 += a15
                except Exception as e:
                    OBS.append(X(e))
            try:
                a14.backward()
            except Exception as e:
                OBS.append(X(e))
            try:
                nd.elemwise_add(a15, a16, out=a15)
            except Exception as e:
                OBS.append(X(e))
            a17 = 3.0 * a6
            a18 = a15 / (0.5 + 4.0)
            a19 = nd.erf(a17)
            a19[:] = a7
            a21 = nd.max(a20, axis=0, keepdims=False)
            a22 = a21[2:3]
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
