"""Special values through every fusible op, bit for bit against eager MXNet: zeros of both
signs, infinities, NaNs of both signs with payloads, a signaling NaN, denormals, the largest
floats, exp's overflow edge. The fuzzer compares NaNs as equal; these compare their bits.

One difference is accepted, where eager MXNet has no single answer: a two-array add or multiply
whose operands are both NaN returns one operand's NaN, and which one depends on the op and, for
elemwise_add, on the element's position in MXNet's own loop (vector body or remainder; checked
in test_both_nan_operands_eager_itself_mixes). Such a result is a NaN either way; only the sign
and payload bits can differ. Every other bit must match."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import nd

import minpy_jit
from conftest import run_both

pytestmark = pytest.mark.skipif(minpy_jit.kernels() is None, reason="kernel library not built")

SPECIAL_BITS = [0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x40200000, 0xc0200000, 0x7f800000, 0xff800000,
                0x7fc00000, 0xffc00000, 0x7fc12345, 0xffc54321, 0x7f800001, 0x00000001, 0x80000001, 0x7f7fffff,
                0xff7fffff, 0x00800000, 0x42b17218, 0xc2b17218, 0x42c80000, 0xc2c80000, 0x3effffff]
SPECIALS = np.array(SPECIAL_BITS, dtype=np.uint32).view(np.float32)
PAIRS_A = np.repeat(SPECIALS, len(SPECIALS))
PAIRS_B = np.tile(SPECIALS, len(SPECIALS))

UNARY = {"relu": nd.relu, "sigmoid": nd.sigmoid, "tanh": nd.tanh, "exp": nd.exp, "log": nd.log, "sqrt": nd.sqrt,
         "rsqrt": nd.rsqrt, "square": nd.square, "abs": nd.abs, "negative": nd.negative,
         "reciprocal": nd.reciprocal, "softsign": nd.softsign,
         "Activation-relu": lambda v: nd.Activation(v, act_type="relu"),
         "Activation-softsign": lambda v: nd.Activation(v, act_type="softsign"),
         "np.tanh": mx.np.tanh, "np.exp": mx.np.exp, "np.log": mx.np.log, "np.sqrt": mx.np.sqrt,
         "np.square": mx.np.square, "np.abs": mx.np.abs, "np.negative": mx.np.negative,
         "np.reciprocal": mx.np.reciprocal, "npx.relu": mx.npx.relu, "npx.sigmoid": mx.npx.sigmoid}
BINARY = {"broadcast_add": nd.broadcast_add, "broadcast_sub": nd.broadcast_sub, "broadcast_mul": nd.broadcast_mul,
          "broadcast_div": nd.broadcast_div, "elemwise_add": nd.elemwise_add, "elemwise_sub": nd.elemwise_sub,
          "elemwise_mul": nd.elemwise_mul, "elemwise_div": nd.elemwise_div,
          "np +": lambda a, b: a + b, "np -": lambda a, b: a - b, "np *": lambda a, b: a * b,
          "np /": lambda a, b: a / b}
COMMUTATIVE = {"broadcast_add", "broadcast_mul", "elemwise_add", "elemwise_mul", "np +", "np *"}
SCALAR = {"x * s": lambda x, s: x * s, "x + s": lambda x, s: x + s, "x - s": lambda x, s: x - s,
          "s - x": lambda x, s: s - x, "x / s": lambda x, s: x / s, "s / x": lambda x, s: s / x}
SCALARS = [0.0, -0.0, 1.0, -2.5, float("inf"), float("-inf"), float("nan"), 1e-45, 3.4e38, 0.1]


def _bits(v):
    return v.asnumpy().view(np.uint32)


def _as(kind, a):
    x = nd.array(a)
    return x.as_np_ndarray() if kind.startswith("np") else x


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_on_special_values(name):
    op = UNARY[name]
    res = run_both(lambda x: [op(x) * 1.0, op(x * 2.0)], _as(name, SPECIALS))
    for e, j in zip(res.eager, res.jitted):
        assert _bits(e).tolist() == _bits(j).tolist(), name
    assert res.stats["fused_kernels"] >= 1, res.stats


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_on_all_pairs_of_special_values(name):
    op = BINARY[name]
    res = run_both(lambda a, b: op(a, b) * 1.0, _as(name, PAIRS_A), _as(name, PAIRS_B))
    e, j = _bits(res.eager), _bits(res.jitted)
    ok = e == j
    if name in COMMUTATIVE:  # the accepted difference: both operands NaN, a NaN either way
        ok |= np.isnan(PAIRS_A) & np.isnan(PAIRS_B) & np.isnan(e.view(np.float32)) & np.isnan(j.view(np.float32))
    assert ok.all(), [(hex(a), hex(b), hex(x), hex(y)) for a, b, x, y in
                      zip(PAIRS_A.view(np.uint32)[~ok], PAIRS_B.view(np.uint32)[~ok], e[~ok], j[~ok])][:5]
    assert res.stats["fused_kernels"] >= 1, res.stats


@pytest.mark.parametrize("s", SCALARS, ids=repr)
@pytest.mark.parametrize("expr", sorted(SCALAR))
@pytest.mark.parametrize("kind", ["nd", "np"])
def test_scalar_ops_on_special_values(kind, expr, s):
    """One program per scalar (a scalar changing between calls at one site is lifted into an
    array input, a broadcast op: see test_fuzz_found / rewrite.cc)."""
    fn = SCALAR[expr]
    res = run_both(lambda x: fn(x, s) * 1.0, _as(kind, SPECIALS))
    assert _bits(res.eager).tolist() == _bits(res.jitted).tolist(), (kind, expr, s)


def test_both_nan_operands_eager_itself_mixes():
    """The accepted difference's premise: eager elemwise_add of two NaNs returns the first
    operand's NaN for some elements and the second's for others, in one call."""
    p, q = 0x7fc11111, 0xffc22222
    a = nd.array(np.full(37, p, np.uint32).view(np.float32))
    b = nd.array(np.full(37, q, np.uint32).view(np.float32))
    got = set(_bits(nd.elemwise_add(a, b)).tolist())
    assert got == {p, q}, [hex(v) for v in got]
