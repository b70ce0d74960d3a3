"""minpy_jit fuzz history reproducer: seed 651763 after 0 of the 10066 programs its worker ran
before it (seeds none), shrunk to 14 statements.

First difference (eager vs jit()): final[3][2][6]: value at (0, 1, 2) is -2.8124888 (eager) vs 0.8124888 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed651763.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (651763, False, {'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(651763)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 3,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2, 2, 4,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 3,)), dtype='float32')
    a4.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float32')
    a6.attach_grad()
    try:
        with J():
            nd.waitall()
            with autograd.record(train_mode=False):
                a5 = nd.sigmoid(a4)
                try:
                    a3 -= a6
                except Exception as e:
                    OBS.append(X(e))
                a7 = -a4
                a8 = nd.log2(nd.abs(a7) + 0.5)
                nd.waitall()
                try:
                    a7[:] = a7 * 2 + 1
                except Exception as e:
                    OBS.append(X(e))
            try:
                autograd.backward([a7, a8])
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
