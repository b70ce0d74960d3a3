"""np_arithmetic.py: `mx.np.ndarray`'s arithmetic operators make the invoke MXNet's chain makes
while jit() has work. Each test compares against eager MXNet (bit for bit: the same op with the
same arguments runs) and checks that outside a scope, and for every call the stand-ins leave
alone, MXNet's own chain runs."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import nd

import minpy_jit
from minpy_jit import np_arithmetic
from conftest import (IN_PLACE, assert_chain_skipped_only_inside_a_scope, in_place, in_place_program,
                      mxnet_python_calls, rand, run_both)

pytestmark = pytest.mark.usefixtures("isolated_runtime")

NP = mx.np.ndarray

DUNDERS = {
    "x + s": lambda x, s: x + s, "s + x": lambda x, s: s + x, "x - s": lambda x, s: x - s,
    "s - x": lambda x, s: s - x, "x * s": lambda x, s: x * s, "s * x": lambda x, s: s * x,
    "x / s": lambda x, s: x / s, "s / x": lambda x, s: s / x, "-x": lambda x, s: -x,
    "x.__rsub__(s)": lambda x, s: x.__rsub__(s), "x.__rtruediv__(s)": lambda x, s: x.__rtruediv__(s),
}
FLOAT_SCALARS = [1.01, -0.5, 3, 0, True, 2 ** 40, float("inf"), float("nan")]
INT_SCALARS = [3, -2, True, 5.0, 2.5]  # no integer zero (an integer division by it kills eager MXNet)


def np_array(a, dtype="float32"):
    return mx.np.array(a, dtype=dtype)


def _same_bits(res):
    for e, j in zip(res.eager, res.jitted):
        assert type(e) is type(j) is NP
        assert e.dtype == j.dtype and e.shape == j.shape
        assert e.asnumpy().tobytes() == j.asnumpy().tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32"])
@pytest.mark.parametrize("expr", sorted(DUNDERS))
def test_scalar_arithmetic_equals_eager_bit_for_bit(expr, dtype):
    fn = DUNDERS[expr]
    if dtype == "int32":
        x, scalars = np_array(np.arange(1, 13).reshape(3, 4), dtype), INT_SCALARS
    else:
        x, scalars = np_array(rand(3, 4) + 1.5, dtype), FLOAT_SCALARS

    def program(x):
        return [fn(x, s) for s in scalars] + [fn(x * 2, 3)]  # a recorded value as self too
    res = run_both(program, x)
    _same_bits(res)
    assert res.stats["ops_recorded"] >= len(scalars), res.stats


ARRAY_OPS = {"x + y": lambda x, y: x + y, "x - y": lambda x, y: x - y, "x * y": lambda x, y: x * y,
             "x / y": lambda x, y: x / y, "x.__rsub__(y)": lambda x, y: x.__rsub__(y),
             "x.__rtruediv__(y) (y / x)": lambda x, y: x.__rtruediv__(y)}


SAME_TYPES = [("float32", "float32"), ("float16", "float16"), ("int32", "int32")]
MIXED_TYPES = [("float64", "float32"), ("float16", "float32")]  # eager MXNet divides only equal types
ARRAY_CASES = [(e, t) for e in sorted(ARRAY_OPS) for t in SAME_TYPES + (MIXED_TYPES if "/" not in e else [])]


@pytest.mark.parametrize("expr,dtypes", ARRAY_CASES, ids=["%s-%s" % (e, "-".join(t)) for e, t in ARRAY_CASES])
def test_array_arithmetic_equals_eager_bit_for_bit(expr, dtypes):
    """Same shapes, broadcast shapes both ways, and mixed float types (MXNet promotes them)."""
    fn = ARRAY_OPS[expr]
    base = (np.arange(1, 13).reshape(3, 4) if dtypes[0] == "int32" else rand(3, 4) + 1.5)
    x = np_array(base, dtypes[0])
    y = np_array(base[::-1] + 1, dtypes[1])
    row = np_array(base[:1] + 2, dtypes[1])
    col = np_array(base[:, :1] + 3, dtypes[1])

    def program(x, y, row, col):
        return [fn(x, y), fn(x, row), fn(row, x), fn(col, row), fn(fn(x, y), y)]
    res = run_both(program, x, y, row, col)
    _same_bits(res)
    assert res.stats["ops_recorded"] >= 5, res.stats


def test_arithmetic_skips_mxnets_python_chain_only_inside_a_scope():
    x, y = np_array(np.ones((2, 3))), np_array(np.full((2, 3), 2.0))

    def use():
        return [x * 1.5, 2 + x, x - 1, 1 - x, x / 4.0, 4.0 / x, 3 * x, -x, x + y, x - y, x * y, x / y]
    chain = {"multiply", "add", "subtract", "divide", "_ufunc_helper", "_wrap_np_binary_func"}
    assert_chain_skipped_only_inside_a_scope(use, chain)
    # a NumPy scalar, a bool, a legacy array: MXNet's methods
    for other in (lambda: x * np.float32(2), lambda: x * True, lambda: x.__mul__(y.as_nd_ndarray())):
        with minpy_jit.jit():
            try:
                calls = mxnet_python_calls(other)
            except TypeError:
                calls = {"_ufunc_helper"}  # MXNet's helper raised it (the legacy-array case)
        assert "_ufunc_helper" in calls



def test_arithmetic_runs_mxnets_method_when_its_chain_was_replaced(monkeypatch):
    import mxnet.ndarray.numpy as nd_np
    calls = []
    real = nd_np.multiply

    def multiply(x1, x2, out=None, **kwargs):
        calls.append(x2 if not isinstance(x2, NP) else "array")
        return real(x1, x2, out=out, **kwargs)
    x = np_array(np.ones((2, 2)))
    with minpy_jit.jit():
        pass
    monkeypatch.setattr(nd_np, "multiply", multiply)
    with minpy_jit.jit():
        y = x * 3.0
        z = 2 * x
        w = x * x
    assert calls == [3.0, 2, "array"]
    assert y.asnumpy().tolist() == [[3.0, 3.0]] * 2 and z.asnumpy().tolist() == [[2.0, 2.0]] * 2
    assert w.asnumpy().tolist() == [[1.0, 1.0]] * 2


def test_arithmetic_errors_are_mxnets():
    x = np_array(np.ones((2, 2)))
    legacy = nd.ones((2, 2))

    def error_of(fn):
        with pytest.raises(Exception) as e:
            fn()
        return type(e.value), str(e.value)
    cases = [lambda: x * 10 ** 400, lambda: 10 ** 400 - x, lambda: x / "a", lambda: x + None,
             lambda: x + legacy, lambda: x.__rsub__(None)]
    want = [error_of(c) for c in cases]
    with minpy_jit.jit():
        got = [error_of(c) for c in cases]
    assert got == want and want[0][0] is OverflowError and want[4][0] is TypeError


def test_shape_mismatch_raises_inside_jit_and_leaves_arrays_usable():
    x, y = np_array(rand(2, 3)), np_array(rand(4, 5))
    with pytest.raises(mx.base.MXNetError) as want:
        (x + y).wait_to_read()
    with pytest.raises(mx.base.MXNetError) as got:
        with minpy_jit.jit():
            (x + y).wait_to_read()
    assert "broadcast" in str(want.value).lower() or "shape" in str(want.value).lower()
    assert "shape" in str(got.value).lower()
    assert np.array_equal((x * 2).asnumpy(), rand(2, 3) * 2) and y.shape == (4, 5)


def test_stand_ins_are_in_place_only_while_the_hooks_are():
    with minpy_jit.jit():
        assert all(NP.__dict__[name] is fn for name, fn in np_arithmetic._FAST.items())
    minpy_jit.intercept.uninstall()
    assert all(NP.__dict__[name] is fn for name, fn in np_arithmetic._REAL.items())
    with minpy_jit.jit():
        y = np_array(np.ones(3)) * 2
    assert y.asnumpy().tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("expr", sorted(IN_PLACE))
def test_in_place_arithmetic_equals_eager_bit_for_bit(expr, dtype):
    name = IN_PLACE[expr]
    base = rand(3, 4) + 1.5
    others = [1.01, -0.5, 3, 0, float("inf"), float("nan")]
    program = in_place_program(name, others)
    res = run_both(program, np_array(base, dtype), np_array(base[::-1] + 1, dtype), np_array(base[:1] + 2, dtype))
    _same_bits(res)


def test_in_place_arithmetic_skips_mxnets_python_only_inside_a_scope_and_checks_writable():
    x, y = np_array(np.ones((2, 3))), np_array(np.ones((1, 3)))

    def use():
        for other in (2.0, 3, y):
            for name in IN_PLACE.values():
                in_place(x, name, other)
    chain = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "_ufunc_helper"}
    assert_chain_skipped_only_inside_a_scope(use, chain)
    frozen = np_array(np.ones((2, 2)))
    frozen.writable = False
    for name in ("__iadd__", "__imul__"):
        with pytest.raises(ValueError) as want:
            in_place(frozen, name, 1)
        with minpy_jit.jit():
            with pytest.raises(ValueError) as got:
                in_place(frozen, name, 1)
        assert str(got.value) == str(want.value)
    assert frozen.asnumpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
