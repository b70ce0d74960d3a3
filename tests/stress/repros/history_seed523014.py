"""minpy_jit fuzz history reproducer: seed 523014 after 0 of the 755 programs its worker ran
before it (seeds none), shrunk to 15 statements.

First difference (eager vs jit()): OBS[2]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (4, 3), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[0.15128937, 0.15222675, 0.20520818],
       [0.11040927, 0.24993245, 0.24984977],
       [0.24872735, 0.24996805, 0 vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed523014.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (523014, False, {'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 7},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(523014)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 4,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a7.attach_grad(grad_req='add')
    a8 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 5,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (10, 8, 10,)), dtype='float32')
    try:
        with J():
            OBS.append(R(a1))
            a11 = nd.tile(a10, reps=(2, 2, 2,))
            OBS.append(R(a7.sum().asscalar()))
            for it in range(5):
                a19.copyto(a11)
            with autograd.record(train_mode=False):
                a24 = nd.sigmoid(a7)
            a24.backward()
            OBS.append(G(a7))
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
