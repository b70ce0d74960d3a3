"""minpy_jit fuzz history reproducer: seed 3041555 after 1 of the 2846 programs its worker ran
before it (seeds 3039584), shrunk to 40 + 26 statements.

First difference (eager vs jit()): final[5][1]: 7 items (eager) vs 2 (jit): ('array', 'NDArray', (1, 1), "<class 'numpy.float32'>", 'cpu(0)', 'default', array([[1.0284963]], dtype=float32)) vs ('raised', 'MXNetError')

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/history_seed3041555.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the programs
import linecache  # noqa: E402

# (seed, exact, config, source): the prior programs, then the one that differs
PROGRAMS = [
    (3039584, False, {'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(3039584)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a1.attach_grad()
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5,)), dtype='float64')
    a8 = nd.array(RNG.uniform(0.0, 0.5, (1,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 3,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 6, 4,)), dtype='float32')
    a21 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 1, 1,)), dtype='float32')
    a21.attach_grad()
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (2,)), dtype='float32')
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float16')
    a26 = nd.array(RNG.uniform(-2.0, 2.0, (3, 1, 3,)), dtype='float32')
    a26.attach_grad(grad_req='add')
    try:
        with J():
            a2 = -a1
            a4 = nd.elemwise_mul(a3, a3)
            a5 = nd.sin(a2)
            a6 = (a5 > 1.1)
            try:
                a7 = a6 / (0.1 + 4.0)
                nd.sgd_mom_update(a2, a1, a8, lr=abs(0.37), momentum=0.9, wd=0.07, out=a2)
                a8[0:1] = 0.9
                a9 = nd.transpose(a7)
                raise Boom('mid-block')
            except Boom as e:
                OBS.append(X(e))
            a10 = a8[0:1]
            a11 = nd.relu(a8)
            a12 = nd.broadcast_maximum(a8, a9)
            l14 = nd.split(a13, num_outputs=3, axis=2)
            a15 = l14[1]
            OBS.append(R(a2))
            with autograd.record():
                a16 = nd.sin(a1)
                a17 = a13.reshape((1, -1,))
                OBS.append(R(a15))
                a18 = nd.tile(a16, reps=(1,))
                OBS.append(R(a6))
                a19 = nd.sigmoid(((nd.square(nd.clip(a17, -3.0, 3.0)) + a17) + 1e-3))
            try:
                a18.backward(retain_graph=True)
            except Exception as e:
                OBS.append(X(e))
            for it in range(5):
                a19.wait_to_read()
                a23 = nd.Convolution(a20, a21, a22, kernel=(1, 1), pad=(0, 0), num_filter=2)
                a25 = nd.ones_like(a24)
                with autograd.record(train_mode=False):
                    a27 = nd.sigmoid(a1)
                try:
                    a27.backward()
                except Exception as e:
                    OBS.append(X(e))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()
"""),
    (3041555, False, {'fuse': False, 'segment_ops': 0, 'async_launch': True, 'max_ops': 7},
     """\
def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(3041555)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5,)), dtype='float32')
    a1.attach_grad()
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1,)), dtype='float32')
    a2.attach_grad()
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a4.attach_grad()
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a8 = nd.array(RNG.randint(0, 5, (2,)), dtype='float32')
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5, 3,)), dtype='float64')
    a11.attach_grad()
    a16 = nd.array(RNG.uniform(-2.0, 2.0, (4, 3,)), dtype='float16')
    a18 = nd.array(RNG.uniform(0.0, 0.5, (1, 1,)), dtype='float32')
    try:
        with J():
            OBS.append(R(a1.asnumpy()))
            a3 = -a2
            with autograd.record(train_mode=False):
                a5 = nd.sigmoid(a4)
                a7 = nd.broadcast_add(a5, a6)
                a9 = nd.pick(a1, a8, axis=1)
            try:
                a5.backward(retain_graph=True)
            except Exception as e:
                OBS.append(X(e))
            OBS.append(G(a4))
            a10 = nd.broadcast_sub(a6, a6)
            l12 = nd.split(a11, num_outputs=2, axis=0, squeeze_axis=True)
            a13 = l12[1]
            a14 = a13.T
            a13[:] = 0.10000002384185791
            a15 = nd.swapaxes(a3, dim1=1, dim2=0)
            a17 = nd.sort(a16, axis=1)
            nd.sgd_mom_update(a15, a3, a18, lr=abs(0.5), momentum=0.9, wd=0.07, out=a15)
            try:
                raise Boom('mid-block')
            except Boom as e:
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
