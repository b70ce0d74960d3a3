"""minpy_jit fuzz history reproducer: seed 656960 after 0 of the 5060 programs its worker ran
before it (seeds none), shrunk to 41 statements.

First difference (eager vs jit()): final[22][2][6]: value at (0, 0) is -0.009469749 (eager) vs -0.0047348747 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed656960.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (656960, False, {'fuse': True, 'segment_ops': 4, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(656960)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 5,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2,)), dtype='float32')
    a2.attach_grad()
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 2,)), dtype='float32')
    a3.attach_grad(grad_req='add')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 1,)), dtype='float32')
    a4.attach_grad()
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a7.attach_grad(grad_req='add')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float32')
    a10.attach_grad()
    a14 = nd.array(RNG.randint(0, 3, (1,)), dtype='float32')
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (3, 2,)), dtype='float32')
    a16.attach_grad()
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (1, 2,)), dtype='float32')
    try:
        with J():
            a5 = a3 + a4
            a6 = nd.cbrt(a4)
            with autograd.record():
                a8 = nd.tanh(a3)
                FLUSH()
                a9 = nd.LeakyReLU(a1, slope=0.1)
                a11 = nd.linalg.gemm2(a9, a10, alpha=0.5)
                with autograd.pause():
                    OBS.append(R(a4.asnumpy()))
                    a12 = nd.where(a11 > 0, a11, a11)
                    a13 = a12.T
                with J():
                    OBS.append(R(a13.sum().asscalar()))
                    with J():
                        a15 = nd.take(a7, a14)
                        a17 = nd.clip(nd.negative((nd.sigmoid(((a7 - -0.75) * a16)) - 2.0)), -3.0, 3.0)
                        try:
                            nd.elemwise_add(a16, a16, out=a16)
                        except Exception as e:
                            OBS.append(X(e))
                        try:
                            a17[:, 1:2] = -0.75
                        except Exception as e:
                            OBS.append(X(e))
                    try:
                        a15.copyto(a15)
                    except Exception as e:
                        OBS.append(X(e))
                    try:
                        a20 = a18 * a19
                        a21 = nd.floor(a20)
                        raise Boom('mid-block')
                    except Boom as e:
                        OBS.append(X(e))
            try:
                autograd.backward([a17, a11])
            except Exception as e:
                OBS.append(X(e))
            a22 = nd.clip(a3, -1.0, 1.0)
            a23 = nd.softmax(a15, axis=1)
            try:
                a3[:] = 1.0
            except Exception as e:
                OBS.append(X(e))
            a20[1:4] = 1.0
            nd.waitall()
            a25 = nd.maximum(a23, a24)
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
