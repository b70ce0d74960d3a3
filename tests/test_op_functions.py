"""op_functions.py: the C stand-ins for MXNet's generated `mx.nd` op functions.

Differential: for every op function a stand-in covers, the call that reaches `_imperative_invoke`
(handle, ndargs, keys, vals, out and the two flags: the same objects, in the same order) is the
one MXNet's generated function makes, over positional / keyword / default / `out=` / `name=`
calls; the calls a stand-in leaves to MXNet (other array types, unknown keywords, `dtype`, bad
arity) reach MXNet's function and give its result or its exact error. Then results under jit()
equal eager MXNet's bit for bit for the optimizer updates and a W1-style chain.
"""
import inspect
import sys

import mxnet as mx
import mxnet.ndarray.register as register
import numpy as np
import pytest
from mxnet import nd
from mxnet.base import _Null
from mxnet.ndarray.ndarray import NDArray

import minpy_jit
from minpy_jit import _core, intercept, op_functions
from conftest import arr, assert_same, rand

pytestmark = pytest.mark.usefixtures("isolated_runtime")

OpFunction = type(next(iter(op_functions.STAND_INS.values())))


class Capture:
    """Stands in for _imperative_invoke: keeps each call's arguments, and whether MXNet's
    generated function made it (its frame is the caller's) or a stand-in did (no Python frame)."""

    def __init__(self):
        self.calls = []
        self.result = object()

    def __call__(self, *args):
        caller = sys._getframe(1).f_code
        self.calls.append((args, caller.co_filename == "<string>"))
        return self.result


class captured:
    """Inside a jit() scope (the stand-ins act), with _imperative_invoke replaced by a Capture."""

    def __enter__(self):
        self.scope = minpy_jit.jit()
        self.scope.__enter__()
        self.saved = register._imperative_invoke
        self.capture = register._imperative_invoke = Capture()
        return self.capture

    def __exit__(self, *exc):
        register._imperative_invoke = self.saved
        return self.scope.__exit__(*exc)


def same_call(a, b):
    """Two invoke argument tuples pass the same objects (lists compared item by item)."""
    assert len(a) == len(b) == 7
    h1, nd1, k1, v1, o1, np1, l1 = a
    h2, nd2, k2, v2, o2, np2, l2 = b
    assert h1 == h2 and type(h1) is type(h2)
    assert type(nd1) is type(nd2) is list and len(nd1) == len(nd2) and all(x is y for x, y in zip(nd1, nd2))
    assert type(k1) is type(k2) is list and k1 == k2 and all(type(k) is str for k in k2)
    # (MXNet makes a new str for a dtype it converts)
    assert type(v1) is type(v2) is list and len(v1) == len(v2)
    assert all(x is y or (type(x) is type(y) is str and x == y) for x, y in zip(v1, v2))
    if isinstance(o1, list):
        assert type(o2) is list and len(o1) == len(o2) and all(x is y for x, y in zip(o1, o2))
    else:
        assert o1 is o2
    assert np1 is np2 and l1 is l2


def call_both(real, stand_in, args, kwargs, expect_fast=True):
    """Calls MXNet's function and the stand-in with the same arguments; checks the invoke
    calls agree, and which path the stand-in took."""
    with captured() as cap:
        r1 = real(*args, **kwargs)
        r2 = stand_in(*args, **kwargs)
    assert r1 is r2 is cap.result
    (a1, by_real1), (a2, by_real2) = cap.calls
    assert by_real1, "MXNet's function made the first call"
    assert by_real2 == (not expect_fast), (real.__name__, args, kwargs)
    same_call(a1, a2)
    return a2


def call_both_error(real, stand_in, args, kwargs):
    with captured() as cap:
        with pytest.raises(Exception) as e1:
            real(*args, **kwargs)
        with pytest.raises(Exception) as e2:
            stand_in(*args, **kwargs)
    assert type(e1.value) is type(e2.value) and str(e1.value) == str(e2.value)
    assert cap.calls == []
    return e2.value


def mxnets(fn):
    return getattr(fn, "__wrapped__", fn)


def arrays(n):
    return [nd.zeros((1,)) for _ in range(n)]


class Val:
    """A distinct attribute value (the stub never parses it)."""

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return "Val(%d)" % self.i


def layout(fn):
    """(array params, attribute params, dtype param present) of a fixed-arity generated fn."""
    params = list(inspect.signature(fn).parameters.values())
    arr = [p.name for p in params if p.default is None and p.name not in ("out", "name")]
    attrs = [p.name for p in params if p.default is _Null]
    return arr, attrs


COVERED = sorted(op_functions.STAND_INS.items(), key=lambda kv: (kv[0].__module__, kv[0].__name__))
VAR_ARGS = [(f, s) for f, s in COVERED if f.__code__.co_argcount == 0]
FIXED = [(f, s) for f, s in COVERED if f.__code__.co_argcount > 0]


def test_coverage():
    """Every legacy op function MXNet generated into mx.nd's modules has a stand-in, the
    optimizer updates and common layers among them; numpy-interface ops have none."""
    names = {f.__name__ for f, _ in COVERED}
    for name in ("sgd_update", "sgd_mom_update", "nag_mom_update", "adam_update", "rmsprop_update",
                 "rmspropalex_update", "ftrl_update", "signsgd_update", "signum_update", "mp_sgd_update",
                 "mp_sgd_mom_update", "multi_sgd_update", "multi_sgd_mom_update", "multi_mp_sgd_update",
                 "relu", "sigmoid", "tanh", "exp", "FullyConnected", "Activation", "Convolution",
                 "BatchNorm", "broadcast_add", "elemwise_add", "dot", "_plus_scalar", "_mul_scalar",
                 "add_n", "concat", "softmax", "sum"):
        assert name in names, name
    for module in (nd.op, nd._internal, nd.contrib, nd.linalg):
        for attr, value in vars(module).items():
            value = mxnets(value)  # (installed by an earlier test)
            if (getattr(value, "__globals__", None) is register.__dict__ and not attr.startswith("_np")
                    and not attr.startswith("_minpy_")):
                assert value in op_functions.STAND_INS, attr
    assert not any(f.__name__.startswith(("_np", "_npi", "_npx")) for f, _ in COVERED)
    assert len(VAR_ARGS) > 5 and len(FIXED) > 500


@pytest.mark.parametrize("real,stand_in", FIXED, ids=[f.__module__ + "." + f.__name__ for f, _ in FIXED])
def test_fixed_arity_calls_match(real, stand_in):
    arr, attrs = layout(real)
    ins = arrays(len(arr))
    vals = [Val(i) for i in range(len(attrs))]
    out = nd.zeros((1,))
    # arrays positional; defaults
    call_both(real, stand_in, ins, {})
    # arrays as keywords, in reverse order; attributes as keywords in reverse order; out and name
    kw = {n: a for n, a in reversed(list(zip(arr, ins)))}
    kw.update((n, v) for n, v in reversed(list(zip(attrs, vals))) if n != "dtype")
    call = call_both(real, stand_in, [], dict(kw, out=out, name="n1"))
    assert call[4] is out
    # every parameter positional (dtype left at its default), out as a list
    pos = ins + [(_Null if n == "dtype" else v) for n, v in zip(attrs, vals)] + [[out, nd.zeros((1,))], "n2"]
    call = call_both(real, stand_in, pos, {})
    assert call[2] == [n for n in attrs if n != "dtype"]
    # a few positional, the rest by keyword; some arrays None, some attributes _Null explicitly
    if arr:
        some = [None if i % 2 else a for i, a in enumerate(ins)]
        kw = {n: (_Null if i % 2 else v) for i, (n, v) in enumerate(zip(attrs, vals)) if n != "dtype"}
        call_both(real, stand_in, some[:1], dict(zip(arr[1:], some[1:]), **kw))
    # the same attribute values as MXNet's user code passes them: floats, ints, bools, strings, tuples
    typed = [0.1, 3, True, "relu", (2, 3), None, -1e-8, 1.5e300]
    kw = {n: typed[i % len(typed)] for i, n in enumerate(attrs) if n != "dtype"}
    call_both(real, stand_in, ins, kw)


@pytest.mark.parametrize("real,stand_in", VAR_ARGS, ids=[f.__module__ + "." + f.__name__ for f, _ in VAR_ARGS])
def test_variable_arity_calls_match(real, stand_in):
    ins = arrays(3)
    out = nd.zeros((1,))
    call_both(real, stand_in, ins, {})
    call_both(real, stand_in, ins, {"num_args": 3})
    call = call_both(real, stand_in, ins, {"name": "x", "b": Val(1), "out": out, "a": Val(2)})
    assert call[2] == ["b", "a"] and call[4] is out
    call_both(real, stand_in, ins[:1], {"out": [out, nd.zeros((1,))], "num_weights": 1, "lrs": (0.1,)})
    call_both(real, stand_in, [], {})


FIXED_BY_NAME = {name: (f, op_functions.STAND_INS[f]) for name, f in vars(nd.op).items()
                 if inspect.isfunction(f) and f in op_functions.STAND_INS and f.__code__.co_argcount > 0}


@pytest.mark.parametrize("name", ["sgd_mom_update", "FullyConnected", "relu", "Activation"])
def test_calls_left_to_mxnet(name):
    """What a stand-in does not know passes to MXNet's function: same invoke or same error."""
    real, stand_in = FIXED_BY_NAME[name]
    arr, attrs = layout(real)
    ins = arrays(len(arr))

    class Sub(NDArray):
        __slots__ = ()

    sub = nd.zeros((1,))
    sub.__class__ = Sub
    call_both(real, stand_in, [sub] + ins[1:], {}, expect_fast=False)           # an NDArray subclass
    call_both(real, stand_in, ins, {"not_an_attr": 1}, expect_fast=False)      # a keyword outside the signature
    call_both(real, stand_in, ins, {"out": (sub,)}, expect_fast=False)         # out holding a subclass
    call_both(real, stand_in, ins, {"out": [ins[0], None]}, expect_fast=False)  # out holding None
    err = call_both_error(real, stand_in, [np.zeros(1)] + ins[1:], {})        # not an NDArray
    assert isinstance(err, AssertionError) and "must have NDArray type" in str(err)
    err = call_both_error(real, stand_in, [mx.np.zeros(1)] + ins[1:], {})     # a numpy-interface array
    assert isinstance(err, TypeError) and "legacy" in str(err)
    err = call_both_error(real, stand_in, ins, {"out": mx.np.zeros(1)})
    assert isinstance(err, TypeError)
    err = call_both_error(real, stand_in, ins + [0] * (len(attrs) + 3), {})   # too many positionals
    assert isinstance(err, TypeError) and "positional" in str(err)
    err = call_both_error(real, stand_in, ins, {arr[0]: ins[0]})              # a parameter twice
    assert isinstance(err, TypeError) and "multiple values" in str(err)


def test_dtype_left_to_mxnet():
    """MXNet converts `dtype` with numpy (np.float32 -> 'float32'): the stand-in leaves it to MXNet."""
    real, stand_in = FIXED_BY_NAME["Cast"]
    x = nd.zeros((1,))
    a = call_both(real, stand_in, [x], {"dtype": np.float16}, expect_fast=False)
    assert a[2] == ["dtype"] and a[3] == ["float16"]
    call_both(real, stand_in, [x], {}, expect_fast=True)
    real, stand_in = [(f, s) for f, s in VAR_ARGS if f.__name__ == "add_n"][0]
    call_both(real, stand_in, [x, x], {"dtype": "float32"}, expect_fast=False)


def test_changed_globals_leave_calls_to_mxnet():
    """A stand-in acts only while the generated code's globals, and the function's code and
    defaults, are those it was made for."""
    real, stand_in = FIXED_BY_NAME["relu"]
    x = nd.zeros((1,))
    for name, value in [("_verify_all_legacy_ndarrays", lambda *a: None), ("_Null", object())]:
        saved = register.__dict__[name]
        register.__dict__[name] = value
        try:
            call_both(real, stand_in, [x], {}, expect_fast=False)
        finally:
            register.__dict__[name] = saved
    call_both(real, stand_in, [x], {}, expect_fast=True)
    saved = real.__defaults__  # the function's own defaults replaced (by an equal tuple)
    real.__defaults__ = tuple(list(saved))
    try:
        call_both(real, stand_in, [x], {}, expect_fast=False)
    finally:
        real.__defaults__ = saved
    call_both(real, stand_in, [x], {}, expect_fast=True)


def test_stand_ins_installed_in_mxnet_modules_and_removed():
    real = op_functions.STAND_INS
    relu, upd, adamw = mxnets(nd.relu), mxnets(nd.sgd_mom_update), mxnets(nd._internal._adamw_update)
    from mxnet.optimizer import optimizer as opt
    with minpy_jit.jit():
        assert type(nd.relu) is OpFunction and nd.relu is nd.op.relu and nd.relu is real[relu]
        assert opt.sgd_mom_update is real[upd] and nd.sgd_mom_update is real[upd]
        assert nd._internal._adamw_update is real[adamw]
    assert nd.relu is real[relu]  # stays, and calls MXNet's own while no scope has work
    assert intercept.uninstall()
    assert nd.relu is relu and nd.op.relu is relu and nd.sgd_mom_update is upd and opt.sgd_mom_update is upd
    assert nd._internal._adamw_update is adamw
    with minpy_jit.jit():
        assert nd.relu is real[relu]


def test_stand_in_looks_like_the_function():
    real, stand_in = FIXED_BY_NAME["sgd_mom_update"]
    assert stand_in.__name__ == real.__name__ and stand_in.__doc__ == real.__doc__
    assert stand_in.__module__ == real.__module__ and stand_in.__wrapped__ is real
    assert inspect.signature(stand_in) == inspect.signature(real)

    class Holder:  # as a class attribute, bound to the instance like a function
        op = stand_in
        real_op = real
    h = Holder()
    assert Holder.op is stand_in and Holder.real_op is real
    assert h.op.__self__ is h and h.op.__func__ is stand_in
    assert h.real_op.__self__ is h and h.real_op.__func__ is real


def test_outside_a_scope_mxnet_runs():
    """Outside any scope (hooks inactive) the stand-in is MXNet's function: eager results."""
    with minpy_jit.jit():
        pass
    x = arr(rand(3, 4, seed=1))
    assert type(nd.relu) is OpFunction
    assert_same(nd.relu(x - 0.5), mxnets(nd.relu)(x - 0.5))


def test_imported_by_name_keeps_mxnets_function():
    assert intercept.uninstall()
    from mxnet.ndarray import relu as imported
    x = arr(rand(3, 4, seed=2)) - 0.5
    with minpy_jit.jit():
        y = imported(x)
        z = nd.relu(x)
    assert imported is nd.relu.__wrapped__ and type(imported) is not OpFunction
    assert_same(y, z)


# ---- results equal eager MXNet's, bit for bit

def _update_cases():
    lr, wd = 0.1, 0.01
    return {
        "sgd_update": lambda w, g, s1, s2: nd.sgd_update(w, g, lr=lr, wd=wd, out=w),
        "sgd_mom_update": lambda w, g, s1, s2: nd.sgd_mom_update(w, g, s1, lr=lr, momentum=0.9, wd=wd, out=w),
        "nag_mom_update": lambda w, g, s1, s2: nd.nag_mom_update(w, g, s1, lr=lr, momentum=0.9, out=w),
        "adam_update": lambda w, g, s1, s2: nd.adam_update(w, g, s1, s2, lr=lr, beta1=0.9, beta2=0.999,
                                                         epsilon=1e-8, wd=wd, rescale_grad=0.5, out=w),
        "rmsprop_update": lambda w, g, s1, s2: nd.rmsprop_update(w, g, s1, lr=lr, gamma1=0.9, epsilon=1e-8, out=w),
        "rmspropalex_update": lambda w, g, s1, s2: nd.rmspropalex_update(
            w, g, s1, s2, nd.zeros(w.shape), lr=lr, gamma1=0.9, gamma2=0.9, epsilon=1e-8, out=w),
        "ftrl_update": lambda w, g, s1, s2: nd.ftrl_update(w, g, s1, s2, lr=lr, lamda1=0.01, beta=1.0, out=w),
        "signum_update": lambda w, g, s1, s2: nd.signum_update(w, g, s1, lr=lr, momentum=0.9, wd_lh=0.01, out=w),
        "multi_sgd_mom_update": lambda w, g, s1, s2: nd.multi_sgd_mom_update(
            w, g, s1, w, g, s1, lrs=(lr, lr), wds=(wd, wd), momentum=0.9, num_weights=2, out=[w, w]),
        "adamw": lambda w, g, s1, s2: nd.contrib.adamw_update(
            w, g, s1, s2, nd.ones((1,)), lr=lr, eta=1.0, wd=wd, out=w),
    }


@pytest.mark.parametrize("name", sorted(_update_cases()))
def test_update_ops_equal_eager(name):
    step = _update_cases()[name]

    def run(use_jit):
        w, g = arr(rand(40, 33, seed=3)), arr(rand(40, 33, seed=4)) - 0.5
        s1, s2 = nd.zeros(w.shape), nd.zeros(w.shape)
        ctx = minpy_jit.jit() if use_jit else None
        if ctx:
            ctx.__enter__()
        for k in range(5):
            step(w, g * (k + 1), s1, s2)
        if ctx:
            assert type(nd.sgd_update) is OpFunction
            ctx.__exit__(None, None, None)
        return [w, s1, s2]
    eager, jitted = run(False), run(True)
    for a, b in zip(eager, jitted):
        assert np.array_equal(a.asnumpy(), b.asnumpy())
        assert a.dtype == b.dtype


def test_chain_and_layers_equal_eager():
    x0, w, b = arr(rand(8, 16, seed=5)), arr(rand(12, 16, seed=6)), arr(rand(12, seed=7))

    def fn():
        x = x0
        for _ in range(30):
            x = nd.relu(x * 1.01 + 0.5)
            x = nd.sigmoid(x) - 0.25
        y = nd.FullyConnected(x, w, b, num_hidden=12)
        y = nd.Activation(y, act_type="tanh")
        z = nd.FullyConnected(data=x, weight=w, no_bias=True, num_hidden=12)
        return [x, y, nd.broadcast_add(y, z), nd.concat(y, z, dim=1), nd.add_n(y, z, y), y.sum(axis=1)]
    eager = fn()
    before = minpy_jit.stats()
    with minpy_jit.jit():
        jitted = fn()
    after = minpy_jit.stats()
    assert after["ops_recorded"] > before["ops_recorded"]
    for a, b in zip(eager, jitted):
        assert np.array_equal(a.asnumpy(), b.asnumpy()) and a.dtype == b.dtype and a.shape == b.shape


def test_gradients_equal_eager():
    x0, w = arr(rand(4, 6, seed=8)), arr(rand(5, 6, seed=9))

    def fn():
        x, ww = x0.copy(), w.copy()
        x.attach_grad()
        ww.attach_grad()
        with mx.autograd.record():
            y = nd.FullyConnected(x, ww, no_bias=True, num_hidden=5)
            loss = nd.sum(nd.relu(y) * 2.0)
        loss.backward()
        return [loss, x.grad, ww.grad]
    eager = fn()
    with minpy_jit.jit():
        jitted = fn()
    for a, b in zip(eager, jitted):
        assert np.array_equal(a.asnumpy(), b.asnumpy())


def test_error_inside_jit_is_mxnets():
    """A call the stand-in makes whose op MXNet rejects: the error the same call through
    MXNet's function gets, and earlier arrays intact."""
    x = nd.ones((2, 3))
    errors = []
    for fn in (nd.sgd_update, mxnets(nd.sgd_update)):
        with pytest.raises(Exception) as e:
            with minpy_jit.jit():
                y = x * 2
                assert type(nd.sgd_update) is OpFunction
                fn(y, x, lr="not a number", out=y)
        errors.append(e.value)
        assert np.array_equal(y.asnumpy(), np.full((2, 3), 2, np.float32))
    assert type(errors[0]) is type(errors[1]) and str(errors[0]) == str(errors[1])
    assert "Invalid Parameter format for lr" in str(errors[0])
