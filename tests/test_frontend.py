"""frontend.py: MXNet's per-op Python helpers swapped for faster equivalents while jit() has
work. Each test checks the stand-in behaves as MXNet's own, and that outside any scope MXNet's
own functions run."""
import os
import sys

import mxnet as mx
import mxnet.ndarray.register as register
import pytest
from mxnet import nd
from mxnet.ndarray.ndarray import NDArray

import minpy_jit
from minpy_jit import frontend, intercept
from conftest import arr, assert_same, rand, run_both

pytestmark = pytest.mark.usefixtures("isolated_runtime")


PROPERTIES = ("context", "dtype", "stype", "_fresh_grad")
MXNET_DIR = os.path.dirname(mx.__file__)


def _helpers():
    return (register._verify_all_legacy_ndarrays, register._verify_all_np_ndarrays,
            *(NDArray.__dict__[name] for name in PROPERTIES))


def _mxnet_python_calls(fn):
    """Names of the functions in mxnet's own Python files that fn() called."""
    seen = set()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(MXNET_DIR):
            seen.add(frame.f_code.co_name)
    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def test_stand_ins_act_only_inside_a_scope():
    """Installed at the first scope and left in place; outside any scope each one calls
    MXNet's own function (the argument check, the properties, the op's invoke)."""
    with minpy_jit.jit():
        inside = _helpers()
    assert inside == (frontend.verify_all_legacy_ndarrays, frontend.verify_all_np_ndarrays,
                      *(frontend._FAST[name] for name in PROPERTIES))
    assert _helpers() == inside and intercept.hooks_installed() and not intercept.hooks_active()
    x = nd.ones((2, 3))
    x.attach_grad()

    def use():
        x.context, x.dtype, x.stype, x._fresh_grad
        x._fresh_grad = False
        return nd.relu(x)
    mxnet_parts = {"_verify_all_legacy_ndarrays", "context", "dtype", "stype", "_fresh_grad", "_imperative_invoke"}
    outside = _mxnet_python_calls(use)
    assert mxnet_parts <= outside, outside
    with minpy_jit.jit():
        inside = _mxnet_python_calls(use)
    assert not (mxnet_parts & inside), inside


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


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "uint8", "int32", "int64"])
def test_dtype_and_stype_of_real_and_lazy_arrays_are_mxnets(dtype):
    x = nd.ones((2, 3), dtype=dtype)
    want = (x.dtype, x.stype, (x + 1).dtype, x.astype("float32").dtype)
    with minpy_jit.jit():
        y, z = x + 1, x.astype("float32")
        got = (x.dtype, x.stype, y.dtype, z.dtype)
        assert minpy_jit._core.pending()  # reading metadata did not flush
    assert got == want


def test_stype_of_sparse_arrays_is_mxnets():
    rsp = nd.zeros((3, 2)).tostype("row_sparse")
    csr = nd.zeros((3, 2)).tostype("csr")
    with minpy_jit.jit():
        assert (rsp.stype, csr.stype, rsp.dtype) == ("row_sparse", "csr", rsp.astype("float32").dtype)


def test_fresh_grad_reads_and_writes_as_mxnets():
    def reads(w):
        seen = [w._fresh_grad]
        for state in (False, 1, 0, True):
            w._fresh_grad = state
            seen.append(w._fresh_grad)
        return seen

    w = nd.ones((2, 2))
    w.attach_grad()
    with mx.autograd.record():
        (w * 3).backward()
    want = reads(w)
    with mx.autograd.record():
        (w * 3).backward()
    with minpy_jit.jit():
        got = reads(w)
    assert [(type(v), v) for v in got] == [(type(v), v) for v in want] and want[0] == 1


def _set_fresh_grad(x):
    x._fresh_grad = False


def _recorded_result(x):
    with mx.autograd.record():
        y = x * 2  # pending under jit(): setting its flag flushes first
    _set_fresh_grad(y)


@pytest.mark.parametrize("case", [_set_fresh_grad, _recorded_result])
def test_setting_fresh_grad_of_an_array_without_gradient_gets_mxnets_error(case):
    x = nd.ones((2, 2))
    with pytest.raises(mx.base.MXNetError) as want:
        case(x)
    with minpy_jit.jit():
        with pytest.raises(mx.base.MXNetError) as got:
            case(x)
    assert str(got.value) == str(want.value) and "does not have gradient state" in str(got.value)
