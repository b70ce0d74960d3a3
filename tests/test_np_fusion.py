"""Fusion of MXNet's NumPy-interface ops (mx.np, npx): elementwise chains written with mx.np
arrays run in our kernels (cpp/src/fuse.cc's `_npi_*` / `_npx_*` rules) with eager's bits,
forward and under autograd, and every test checks from stats() that a kernel really ran.

The rules rest on the np ops running the legacy ops' kernels on float32:
test_np_ops_give_the_legacy_ops_bits checks that claim on eager MXNet itself."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, nd

import minpy_jit
from conftest import run_both

pytestmark = pytest.mark.skipif(minpy_jit.kernels() is None, reason="kernel library not built")

UNARY = {  # mx.np / npx op -> its legacy twin
    "tanh": (mx.np.tanh, nd.tanh), "exp": (mx.np.exp, nd.exp), "log": (mx.np.log, nd.log),
    "sqrt": (mx.np.sqrt, nd.sqrt), "square": (mx.np.square, nd.square), "abs": (mx.np.abs, nd.abs),
    "negative": (mx.np.negative, nd.negative), "reciprocal": (mx.np.reciprocal, nd.reciprocal),
    "relu": (mx.npx.relu, nd.relu), "sigmoid": (mx.npx.sigmoid, nd.sigmoid),
}
POSITIVE_ONLY = {"log", "sqrt", "reciprocal"}
SCALAR = {"x * s": lambda x, s: x * s, "x + s": lambda x, s: x + s, "x - s": lambda x, s: x - s,
          "s - x": lambda x, s: s - x, "x / s": lambda x, s: x / s, "s / x": lambda x, s: s / x}
BINARY = {"x + y": lambda x, y: x + y, "x - y": lambda x, y: x - y, "x * y": lambda x, y: x * y,
          "x / y": lambda x, y: x / y}
SCALARS = [1.01, 0.5, -2.7, 0.1, 3, 1e-7, 0.7000000000000001, 0.0]


def _inputs(n=100000, positive=False, seed=0):
    r = np.random.RandomState(seed)
    a = np.concatenate([r.uniform(-10, 10, n), r.standard_normal(n) * 1e-3,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 88.7, -88.7, 3.4e38, -3.4e38]])
    if positive:
        a = np.abs(a) + 0.25
    return a.astype(np.float32)


def _np(a):
    return mx.np.array(a, dtype=a.dtype)


def _same(res):
    for e, j in zip(res.eager, res.jitted):
        assert type(e) is type(j) and e.dtype == j.dtype and e.shape == j.shape
        assert e.asnumpy().tobytes() == j.asnumpy().tobytes()


def test_np_ops_give_the_legacy_ops_bits():
    """The premise of the rules, on eager MXNet: each np op equals its legacy twin bit for bit,
    forward and its gradient (same shapes; scalars from the fuzzer's constants)."""
    a, p = _inputs(), _inputs(positive=True, seed=1)
    og = np.random.RandomState(2).uniform(-2, 2, a.size).astype(np.float32)

    def forward_and_grad(f, x, np_mode):
        x = nd.array(x)
        x = x.as_np_ndarray() if np_mode else x
        x.attach_grad()
        with autograd.record():
            y = f(x)
        y.backward(_np(og) if np_mode else nd.array(og))
        return y.asnumpy().tobytes(), x.grad.asnumpy().tobytes()
    for name, (np_op, nd_op) in UNARY.items():
        x = p if name in POSITIVE_ONLY else a
        assert forward_and_grad(np_op, x, True) == forward_and_grad(nd_op, x, False), name
    for s in SCALARS:
        for expr, fn in SCALAR.items():
            x = p if expr == "s / x" else a
            assert forward_and_grad(lambda v: fn(v, s), x, True) == forward_and_grad(lambda v: fn(v, s), x, False), \
                (expr, s)
    b = _inputs(positive=True, seed=3)
    for expr, fn in BINARY.items():
        assert (forward_and_grad(lambda v: fn(v, _np(b)), a, True)
                == forward_and_grad(lambda v: fn(v, nd.array(b)), a, False)), expr


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_np_ops_in_a_chain(name):
    op = UNARY[name][0]
    x = _np(_inputs(positive=name in POSITIVE_ONLY))

    def program(x):
        y = op(x * 0.5 + 0.25)
        return [y, op(y) * 2.0]
    res = run_both(program, x)
    _same(res)
    assert res.stats["fused_kernels"] >= 1 and res.stats["fused_ops"] >= 5, res.stats


@pytest.mark.parametrize("expr", sorted(SCALAR))
def test_scalar_np_ops_in_a_chain(expr):
    fn = SCALAR[expr]
    x = _np(_inputs(positive=True))

    def program(x):
        return [fn(fn(x, s), 0.3) for s in SCALARS]
    res = run_both(program, x)
    _same(res)
    assert res.stats["fused_ops"] >= 2 * len(SCALARS), res.stats


@pytest.mark.parametrize("expr", sorted(BINARY))
def test_binary_np_ops_same_shape_and_row_broadcast(expr):
    fn = BINARY[expr]
    r = np.random.RandomState(4)
    x, y = _np(r.uniform(-3, 3, (64, 33)).astype(np.float32)), _np(r.uniform(0.5, 2, (64, 33)).astype(np.float32))
    row = _np(r.uniform(0.5, 2, (1, 33)).astype(np.float32))

    def program(x, y, row):
        return [fn(mx.np.tanh(x), y), fn(x * 2.0, row), fn(row, x + 1.0)]
    res = run_both(program, x, y, row)
    _same(res)
    assert res.stats["fused_kernels"] >= 1 and res.stats["fused_ops"] >= 6, res.stats


def test_w2_chain_written_with_mx_np_is_fused_with_eagers_bits():
    """W2's chain, x = tanh(x * 0.9 + 0.1) * sigmoid(x) ten times, on mx.np arrays."""
    x = _np(np.random.RandomState(5).uniform(-2, 2, 262144).astype(np.float32))

    def program(x):
        for _ in range(10):
            x = mx.np.tanh(x * 0.9 + 0.1) * mx.npx.sigmoid(x)
        return x
    res = run_both(program, x)
    _same(res)
    assert res.stats["fused_ops"] == 50, res.stats


def test_np_chain_under_autograd_gives_eagers_gradients():
    r = np.random.RandomState(6)
    x0, w0 = r.uniform(-2, 2, (32, 17)).astype(np.float32), r.uniform(0.5, 2, (32, 17)).astype(np.float32)

    def program(x, w):
        x.attach_grad()
        w.attach_grad()
        with autograd.record():
            h = mx.np.tanh(x * w + 0.5)
            y = mx.npx.sigmoid(h) / w - 2.0 * mx.np.exp(-x) + mx.np.square(h)
        y.backward()
        return [y, x.grad, w.grad]
    res = run_both(program, _np(x0), _np(w0))
    _same(res)
    assert res.stats["fused_kernels"] >= 1, res.stats


def test_other_types_and_is_int_stay_mxnets_ops():
    """float16 and float64 arrays, and an np scalar op given is_int, run as MXNet's ops."""
    r = np.random.RandomState(7)
    h, d = _np(r.uniform(-2, 2, (8, 8)).astype(np.float16)), _np(r.uniform(-2, 2, (8, 8)))
    f = _np(r.uniform(-2, 2, (8, 8)).astype(np.float32))

    def program(h, d, f):
        return [mx.np.tanh(h * 0.5), mx.np.tanh(d * 0.5), mx.nd.np._internal.multiply_scalar(f, 3.0, is_int=True)]
    res = run_both(program, h, d, f)
    _same(res)
    assert res.stats["fused_kernels"] == 0, res.stats
