"""Every operator MXNet registers, run eagerly and under jit(): a lazy array's properties
(type, shape, dtype, context, stype, size, ndim, handle, grad) before and after the flush, and
its data, equal eager's (issue 10, item 3).

The operators and inputs they accept are found programmatically (tests/opcases.py): the
sweep reaches several hundred mx.nd operators and a few hundred mx.np ones.
"""
import ctypes

import mxnet as mx
import numpy as np
import pytest

import minpy_jit
import opcases

LEGACY_OPS = opcases.discover(numpy_ops=False)
NUMPY_OPS = opcases.discover(numpy_ops=True)


def _read(a, name):
    try:
        return getattr(a, name)
    except Exception as e:  # noqa: BLE001 - e.g. .size of a sparse array: eager raises it too
        return "raises " + type(e).__name__


def _properties(a):
    """Everything about an array but its data, as user code reads it."""
    props = {name: _read(a, name) for name in ("shape", "dtype", "context", "stype", "size", "ndim")}
    props["type"] = type(a).__name__
    return props


def _values(a):
    if a.stype != "default":
        a = a.tostype("default")
    return a.asnumpy()


def _assert_same_data(got, value, what):
    assert got.dtype == value.dtype and got.shape == value.shape, (what, got.dtype, got.shape)
    if value.dtype.kind in "fc":
        np.testing.assert_allclose(got, value, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, value, err_msg=what)


def _sweep_one(op, arrays, params):
    mx.random.seed(7)
    eager_ins = [a.copy() for a in arrays]
    eager = opcases.invoke(op, eager_ins, params)
    want = [(_properties(e), _values(e)) for e in eager]
    want_ins = [(_properties(a), _values(a)) for a in eager_ins]  # ops that update inputs in place
    eager_grads = [e.grad for e in eager]
    mx.random.seed(7)
    jit_ins = [a.copy() for a in arrays]
    with minpy_jit.jit():
        jitted = opcases.invoke(op, jit_ins, params)
        pending = [_properties(j) for j in jitted]  # before anything ran
        pending_ins = [_properties(a) for a in jit_ins]
        handles = [j.handle for j in jitted]
        first_read = _values(jitted[0]) if jitted else None  # a read inside the scope runs the op
        grads = [j.grad for j in jitted]
    assert len(jitted) == len(eager)
    for k, (a, (props, value)) in enumerate(zip(jit_ins, want_ins)):
        assert pending_ins[k] == props, ("input", k, "before the flush", pending_ins[k], props)
        assert _properties(a) == props, ("input", k, "after the flush", _properties(a), props)
        _assert_same_data(_values(a), value, "input %d" % k)
    for k, (j, (props, value)) in enumerate(zip(jitted, want)):
        assert pending[k] == props, (k, "before the flush", pending[k], props)
        assert _properties(j) == props, (k, "after the flush", _properties(j), props)
        assert isinstance(handles[k], ctypes.c_void_p) and handles[k].value, handles[k]
        assert grads[k] is None and eager_grads[k] is None
        _assert_same_data(first_read if k == 0 else _values(j), value, "result %d" % k)


@pytest.mark.parametrize("name", sorted(LEGACY_OPS))
def test_every_op_lazy_results_are_eagers(name):
    """Each mx.nd operator MXNet runs on a generated input: the lazy array's properties
    before and after the flush, and its data, equal eager's."""
    _sweep_one(*LEGACY_OPS[name])


@pytest.mark.parametrize("name", sorted(NUMPY_OPS))
def test_every_numpy_op_lazy_results_are_eagers(name):
    with mx.util.np_shape(True), mx.util.np_array(True):
        _sweep_one(*NUMPY_OPS[name])


def test_op_sweep_covers_most_operators():
    """The sweep is only worth its name if it reaches most operators (hundreds in mx.nd)."""
    assert len(LEGACY_OPS) >= 400, len(LEGACY_OPS)
    assert len(NUMPY_OPS) >= 200, len(NUMPY_OPS)
