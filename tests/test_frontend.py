"""frontend.py: MXNet's per-op Python helpers swapped for faster equivalents while a scope
is open. Each test checks the stand-in behaves as MXNet's own, and that leaving the last
scope puts MXNet's functions back."""
import mxnet as mx
import mxnet.ndarray.register as register
import pytest
from mxnet import nd
from mxnet.ndarray.ndarray import NDArray

import minpy_jit
from minpy_jit import frontend
from conftest import arr, assert_same, rand, run_both

pytestmark = pytest.mark.usefixtures("isolated_runtime")


def test_stand_ins_are_in_only_inside_a_scope():
    real = (register._verify_all_legacy_ndarrays, register._verify_all_np_ndarrays, NDArray.__dict__["context"])
    with minpy_jit.jit():
        inside = (register._verify_all_legacy_ndarrays, register._verify_all_np_ndarrays,
                  NDArray.__dict__["context"])
    assert inside == (frontend.verify_all_legacy_ndarrays, frontend.verify_all_np_ndarrays, frontend._FAST_CONTEXT)
    assert (register._verify_all_legacy_ndarrays, register._verify_all_np_ndarrays,
            NDArray.__dict__["context"]) == real


def _error_of(fn):
    with pytest.raises(TypeError) as e:
        fn()
    return str(e.value)


def test_a_numpy_array_given_to_a_legacy_op_gets_mxnets_error():
    x = mx.np.ones((2, 2))
    want = _error_of(lambda: nd.relu(x))
    with minpy_jit.jit():
        got = _error_of(lambda: nd.relu(x))
    assert got == want and "legacy operator" in got


def test_a_numpy_out_array_gets_mxnets_error():
    a, out = nd.ones((2, 2)), mx.np.zeros((2, 2))
    want = _error_of(lambda: nd.relu(a, out=out))
    with minpy_jit.jit():
        got = _error_of(lambda: nd.relu(a, out=out))
    assert got == want and "write to" in got


def test_a_legacy_array_given_to_a_numpy_op_gets_mxnets_error():
    x = nd.ones((2, 2))
    want = _error_of(lambda: mx.nd.numpy._internal.add(x, x))
    with minpy_jit.jit():
        got = _error_of(lambda: mx.nd.numpy._internal.add(x, x))
    assert got == want and "numpy operator" in got


def test_context_is_the_same_fresh_object_for_lazy_and_real_arrays():
    x = arr(rand(2, 3))
    with minpy_jit.jit():
        y = x * 2
        cx, cy = x.context, y.ctx
        assert cx == mx.cpu(0) and cy == mx.cpu(0) and type(cy) is mx.Context
        assert cx is not x.context  # fresh each time, as MXNet's: `with ctx:` keeps state on it
        with cx:
            with x.context:
                z = nd.zeros((2, 3))
            assert mx.current_context() == mx.cpu(0)
    assert z.context == mx.cpu(0) and y.asnumpy().tolist() == (x.asnumpy() * 2).tolist()


def test_gluon_block_under_jit_equals_eager():
    net = mx.gluon.nn.Dense(4, in_units=3)
    net.initialize(mx.init.Xavier())
    res = run_both(lambda x: net(x) * 2, arr(rand(5, 3)))
    assert_same(res.eager, res.jitted)
