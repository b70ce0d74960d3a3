"""minpy_jit fuzz history reproducer: seed 562348 after 0 of the 9362 programs its worker ran
before it (seeds none), shrunk to 9 statements.

First difference (eager vs jit()): final[0][2][6]: value at (0, 0) is 0.530719 (eager) vs -0.530719 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed562348.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (562348, False, {'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(562348)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (5, 2,)), dtype='float32')
    a1.attach_grad()
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a8 = nd.array(RNG.randint(0, 5, (4,)), dtype='float32')
    try:
        with J():
            with autograd.record(train_mode=False):
                a4 = nd.tanh(a1)
                a9 = nd.pick(a7, a8, axis=1)
                a10 = (nd.softsign(nd.tanh((nd.relu((nd.abs(a4) - 1e-3)) * -1.5))) + 7.5)
                try:
                    a4 -= a1
                except Exception as e:
                    OBS.append(X(e))
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
