"""Our kernels on several threads (cpp/kernels/parallel.h): a call with enough work splits its
elements over our helper threads (parallel.h), and the split changes no bit.

* Multi-tensor updates above the threshold: per-weight update ops under jit() (one kernel call
  per step, segment_ops=0) against eager MXNet, and each kernel called directly (float16 multi_precision forms
  too) against MXNet's op per weight, bit for bit; the kernel ran on several threads exactly
  when the process allows more than one (minpy_jit.kernel_threads()).
* The gradient sum of a backward() inside our graph (grad_sum.cc) over two threads, against
  eager autograd's, for float32, float64 and float16.
* A call whose arrays overlap across weights (a gradient that is another weight, or a view of
  it) runs on one thread, in weight order, as MXNet's ops one after the other do.
* Thread settings: OMP_NUM_THREADS=1 gives one thread, MXNET_OMP_MAX_THREADS sets the limit
  (each in a process of its own: the limit is read once), with W2's chain and an update.
"""
import json
import os
import subprocess
import sys
import textwrap

import mxnet as mx
import numpy as np
import pytest
from mxnet import nd

import minpy_jit
from conftest import arr, assert_same, rand, run_both
from test_optimizers import KERNEL_CASES, OP_FORMS, assert_bits, exact, tuple_attr

# 131,809 elements: above multi_update.cc's threshold for two threads (2 x 65,536), with
# chunk boundaries inside the big weight and weights of odd sizes (vector loops' remainders).
BIG_SHAPES = [(300, 301), (7, 5)] + [(64, 64)] * 10 + [(1,), (513,)]


def parallel_calls():
    return minpy_jit.kernel_threads()["parallel_calls"]


def expect_threads(before):
    """The calls since `before` used threads exactly when the process allows more than one."""
    grew = parallel_calls() > before
    assert grew == (minpy_jit.kernel_threads()["max_threads"] > 1), minpy_jit.kernel_threads()


@pytest.mark.parametrize("name", sorted(OP_FORMS))
def test_update_ops_over_threads_equal_eager(name):
    update, n_states, mp = OP_FORMS[name]
    wt = np.float16 if mp else np.float32
    ws32 = [arr(rand(*s, seed=i)) for i, s in enumerate(BIG_SHAPES)]
    ws = [w.astype(wt) for w in ws32]
    states = [[nd.zeros(w.shape) + 0.01 * k for k in range(n_states)] + ([w.copy()] if mp else []) for w in ws32]

    grads = [[arr(rand(*w.shape, seed=100 + 10 * step + i)).astype(wt) for i, w in enumerate(ws)]
             for step in range(3)]
    hyper = {"lr": 0.05, "wd": 1e-3, "rescale_grad": 0.5}

    def steps(ws, states, grads):
        for step_grads in grads:
            update(ws, step_grads, states, hyper)
            minpy_jit.flush()  # a step a graph, as in a training loop (nothing to do eagerly)
        return ws + sum(states, [])

    # segment_ops=0: a step's per-weight updates gathered into one launch (cpp/src/update_batch.h
    # otherwise launches every 64K weight elements, below the kernel's two-thread threshold)
    segment_ops = minpy_jit.config()["segment_ops"]
    minpy_jit.config(segment_ops=0)
    try:
        before = parallel_calls()
        res = run_both(steps, ws, states, grads)
    finally:
        minpy_jit.config(segment_ops=segment_ops)
    assert_same(*res)
    assert res.stats["fused_kernels"] == 3, res.stats  # one kernel call a step
    expect_threads(before)


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "new-array"])
@pytest.mark.parametrize("name", sorted(KERNEL_CASES))
def test_kernel_over_threads_matches_mxnet_op(name, in_place):
    op, n_states, mp, hyper, rule, extra = KERNEL_CASES[name]
    wt = np.float16 if mp else np.float32
    lr, wd = 0.0123, 0.001
    rs = np.random.RandomState(7)
    items = []
    for shape in BIG_SHAPES:
        w = rs.uniform(-1, 1, shape).astype(np.float32)
        states = [np.abs(rs.uniform(0, 0.1, shape)).astype(np.float32) for _ in range(n_states)]
        items.append([w.astype(wt), rs.uniform(-1, 1, shape).astype(wt)] + states
                     + ([w.astype(np.float16).astype(np.float32)] if mp else []))
    ref = [[nd.array(a, dtype=a.dtype) for a in it] for it in items]
    ours = [[nd.array(a, dtype=a.dtype) for a in it] for it in items]
    outs_ref = [it[0] if in_place else nd.zeros(it[0].shape, dtype=wt) for it in ref]
    for it, o in zip(ref, outs_ref):
        op(*it, out=o, lr=lr, wd=wd, **hyper)
    n = len(BIG_SHAPES)
    attrs = dict(num_weights=n, lrs=tuple_attr([lr] * n), wds=tuple_attr([wd] * n), **extra)
    attrs.update({k: exact(v) for k, v in hyper.items()})
    outs = [it[0] if in_place else nd.zeros(it[0].shape, dtype=wt) for it in ours]
    before = parallel_calls()
    getattr(nd._internal, "_minpy_multi_%s_update" % rule)(*sum(ours, []), out=outs, **attrs)
    assert_bits(outs_ref, outs, name + ": new weights")
    assert_bits([a for it in ref for a in it[2:]], [a for it in ours for a in it[2:]], name + ": states")
    expect_threads(before)


@pytest.mark.parametrize("view", [False, True], ids=["another-weight", "view-of-another-weight"])
def test_update_whose_gradient_is_another_weight_stays_in_order(view):
    """Weight 1's gradient is weight 0 (or rows of it): MXNet's ops one after the other give
    weight 1 the gradient weight 0's update wrote, so the kernel must not split that call."""
    w0, g0 = rand(300, 301, seed=1), rand(300, 301, seed=2)
    w1 = rand(150 if view else 300, 301, seed=3)
    attrs = dict(num_weights=2, lrs=tuple_attr([0.5, 0.25]), wds=tuple_attr([0.0, 0.0]), formula="sgd_update")
    ref = [arr(w0), arr(g0), arr(w1)]
    nd.sgd_update(ref[0], ref[1], out=ref[0], lr=0.5)
    nd.sgd_update(ref[2], ref[0][:150] if view else ref[0], out=ref[2], lr=0.25)
    A, G, B = arr(w0), arr(g0), arr(w1)
    before = parallel_calls()
    nd._internal._minpy_multi_sgd_update(A, G, B, A[:150] if view else A, out=[A, B], **attrs)
    assert_bits([ref[0], ref[2]], [A, B])
    assert parallel_calls() == before


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import mxnet as mx
    from mxnet import nd
    import minpy_jit
    x = nd.array(np.linspace(-3, 3, 1 << 20, dtype=np.float32))
    def chain(x):
        for _ in range(3):
            x = nd.tanh(x * 0.9 + 0.1) * nd.sigmoid(x)
        return x
    ws = [nd.ones((64, 64)) for _ in range(40)]
    def update():
        for w in ws:
            nd.sgd_update(w, w * 0.5, out=w, lr=0.1)
    eager = chain(x).asnumpy(); update(); eager_w = ws[0].asnumpy().copy()
    ws = [nd.ones((64, 64)) for _ in range(40)]
    with minpy_jit.jit():
        y = chain(x)
        update()
    same = bool((y.asnumpy().view(np.uint32) == eager.view(np.uint32)).all()
                and (ws[0].asnumpy().view(np.uint32) == eager_w.view(np.uint32)).all())
    print(json.dumps(dict(minpy_jit.kernel_threads(), same=same, fused=minpy_jit.stats()["fused_kernels"])))
""")


@pytest.mark.parametrize("env,most", [({"OMP_NUM_THREADS": "1"}, 1), ({"MXNET_OMP_MAX_THREADS": "2"}, 2),
                                      ({"OMP_NUM_THREADS": "1", "MXNET_OMP_MAX_THREADS": "2"}, 2)],
                         ids=["OMP_NUM_THREADS=1", "MXNET_OMP_MAX_THREADS=2", "both"])
def test_thread_limit_follows_mxnet_settings(env, most):
    full = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS")}
    full.update(env)
    full["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(minpy_jit.__file__)))]
                                         + [p for p in sys.path if p])
    out = subprocess.run([sys.executable, "-c", CHILD], env=full, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["same"], got
    assert got["fused"] >= 2, got  # the chain and the update ran in our kernels
    assert got["max_threads"] == most, got
    assert (got["parallel_calls"] > 0) == (most > 1), got


STRESS = textwrap.dedent("""
    import json, threading
    import numpy as np
    import mxnet as mx
    from mxnet import nd
    import minpy_jit
    prog = "ld 0;ld 1;mul 0 1;add 2 0"
    bad = []
    def worker(seed):
        rs = np.random.RandomState(seed)
        for it in range(40):
            n = int(rs.choice([1, 7, 513, 4096, 65537, 300001]))
            a = nd.array(rs.uniform(-2, 2, n).astype(np.float32))
            b = nd.array(rs.uniform(-2, 2, n).astype(np.float32))
            got = nd._internal._minpy_fused_elemwise(a, b, num_inputs=2, num_outputs=1, out_shape="(%d,)" % n,
                                                     access="0,%d,1;0,%d,1" % (n, n), program=prog, outputs="3")
            want = a * b + a
            if not (got.asnumpy().view(np.uint32) == want.asnumpy().view(np.uint32)).all():
                bad.append((seed, it, n))
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(dict(minpy_jit.kernel_threads(), bad=bad)))
""")


def test_concurrent_calls_share_the_helpers():
    """Two engine workers running our kernels at once (MXNET_CPU_WORKER_NTHREADS=2), from four
    Python threads, every call offered to the helpers (threshold scale 0): a call that finds the
    helpers busy runs alone; every result equals MXNet's ops, and the process ends."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS",)}
    env.update(MXNET_CPU_WORKER_NTHREADS="2", MINPY_KERNELS_THRESHOLD_SCALE="0", MXNET_OMP_MAX_THREADS="2")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(minpy_jit.__file__)))]
                                        + [p for p in sys.path if p])
    out = subprocess.run([sys.executable, "-c", STRESS], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["bad"] == [], got
    assert got["max_threads"] == 2 and got["parallel_calls"] > 0, got


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_gradient_sum_over_threads_equals_eager(dtype):
    """A backward() run inside our graph sums the gradients of a value that feeds two ops with
    our elemwise_sum (grad_sum.cc). At 601,200 elements times two it splits over threads; the
    split must change no bit of x.grad against eager autograd's ElementWiseSum."""
    x0 = arr(rand(600, 1002, seed=3)).astype(dtype)
    t0 = arr(rand(1002, 600, seed=4)).astype(dtype)

    def step(x, t):
        x.attach_grad()
        with mx.autograd.record():
            # x feeds two ops that are not fused with each other: transpose and a row sum
            loss = (nd.transpose(x) * t).sum() + (nd.sum(x, axis=1) * 0.5).sum()
        loss.backward()
        return x.grad

    before = parallel_calls()
    both = run_both(step, x0, t0)
    assert_bits([both.eager], [both.jitted], "x.grad")
    expect_threads(before)
