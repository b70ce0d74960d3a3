"""Faster stand-ins for MXNet's per-op Python helpers, acting while jit() has work (intercept.py).

* Every generated `mx.nd` function calls `_verify_all_legacy_ndarrays` (or the numpy
  twin) before it invokes the op. MXNet's versions import `mxnet.numpy` inside the
  function: 200 `sgd_mom_update` calls took 2.47 us each with MXNet's check and 1.30 us
  with a Python one that imports once (MXNet's wrapper alone, the invoke stubbed out). The
  stand-ins are C builtins from the extension (0.98 us) that do the same isinstance checks;
  on a bad argument they call MXNet's own function, so the error is exactly MXNet's.
* NDArray properties read per argument or per parameter go through ctypes in MXNet:
  `context` (every Gluon block call, for each argument: 1.58 us a call; this one 0.68 us),
  `dtype`, `stype` and `_fresh_grad` (Trainer.step, for every parameter). The stand-ins make
  the same C API call from the extension. `context` builds the same fresh Context (fresh,
  because `with ctx:` stores state on the object); setting `_fresh_grad` flushes pending
  work first, as MXNet's path through the guarded library does. Should a C call fail,
  MXNet's own property runs, so the error is MXNet's.
* NDArray's arithmetic with a Python float or int (`x * 1.01`, `0.5 + x`, `-x`) runs four Python
  functions in MXNet before its invoke (`__mul__` -> `multiply` -> `_ufunc_helper` -> the
  generated `_mul_scalar`); W1 is two thirds such ops. The stand-ins make the invoke that chain
  makes, with the same arguments (`[self]`, `['scalar']`, `[float(other)]`; for two NDArrays
  `broadcast_mul`'s `[self, other]`), when `self` is exactly an NDArray and `other` exactly a
  float or int or an NDArray, and every function of the chain is still MXNet's own (checked on
  each call); anything else runs MXNet's method. They are C objects (operator_stand_ins.cc):
  as Python functions the checks alone cost 0.4 us of an op's 1.1 us recorded.
While `_core.hooks_active()` is false (no scope open, nothing recorded) each calls MXNet's own.
"""
import ctypes

import mxnet.ndarray.register as _register
from mxnet.base import _LIB, c_str
from mxnet.context import Context
from mxnet.ndarray import _internal
from mxnet.ndarray import ndarray as _nd
from mxnet.ndarray import op as _op_module
from mxnet.ndarray.ndarray import NDArray

from . import _core

_REAL_LEGACY = _register._verify_all_legacy_ndarrays
_REAL_NP = _register._verify_all_np_ndarrays
_REAL = {name: NDArray.__dict__[name] for name in ("context", "dtype", "stype", "_fresh_grad")}

# C builtins (bindings.cc) that call MXNet's function only to raise its error
verify_all_legacy_ndarrays = _core.argument_check(_REAL_LEGACY, False)
verify_all_np_ndarrays = _core.argument_check(_REAL_NP, True)

_DTYPE_MX_TO_NP = _nd._DTYPE_MX_TO_NP
_STORAGE_TYPE_ID_TO_STR = _nd._STORAGE_TYPE_ID_TO_STR
_dtype_id, _stype_id = _core.dtype_id, _core.stype_id
_context_of = _core.context_getter(Context)  # a new Context, made in C without Context.__init__
_grad_state, _set_grad_state = _core.grad_state, _core.set_grad_state
_active = _core.hooks_active
_REAL_CONTEXT, _REAL_DTYPE, _REAL_STYPE = (_REAL[name].fget for name in ("context", "dtype", "stype"))
_REAL_GET_FRESH, _REAL_SET_FRESH = _REAL["_fresh_grad"].fget, _REAL["_fresh_grad"].fset


# The builtins raise ValueError when the C call fails; MXNet's property then gives its error.
def _context(self):
    if not _active():
        return _REAL_CONTEXT(self)
    try:
        return _context_of(self)
    except ValueError:
        return _REAL_CONTEXT(self)


def _dtype(self):
    if not _active():
        return _REAL_DTYPE(self)
    try:
        return _DTYPE_MX_TO_NP[_dtype_id(self)]
    except ValueError:
        return _REAL_DTYPE(self)


def _stype(self):
    if not _active():
        return _REAL_STYPE(self)
    try:
        return _STORAGE_TYPE_ID_TO_STR[_stype_id(self)]
    except ValueError:
        return _REAL_STYPE(self)


def _get_fresh_grad(self):
    if not _active():
        return _REAL_GET_FRESH(self)
    try:
        return _grad_state(self)
    except ValueError:
        return _REAL_GET_FRESH(self)


def _set_fresh_grad(self, state):
    if not _active():
        return _REAL_SET_FRESH(self, state)
    try:
        _set_grad_state(self, state)
    except ValueError:
        _REAL_SET_FRESH(self, state)


_FAST = {
    "context": property(_context, doc=_REAL["context"].__doc__),
    "dtype": property(_dtype, doc=_REAL["dtype"].__doc__),
    "stype": property(_stype, doc=_REAL["stype"].__doc__),
    "_fresh_grad": property(_get_fresh_grad, _set_fresh_grad, doc=_REAL["_fresh_grad"].__doc__),
}


# ---- NDArray arithmetic with a Python scalar
_INVOKE = _core.invoke
_GENERATED = _internal._mul_scalar.__globals__  # the generated op functions' globals (register's)
_UFUNC_HELPER = _nd._ufunc_helper
# generated op name -> [MXNet's function, op_functions.py's stand-in for it]: either may be in
# _internal when a scalar stand-in runs (both make the same invoke)
_GENERATED_STAND_INS = {}


def _op_handle(name):
    h = ctypes.c_void_p()
    if _LIB.NNGetOpHandle(c_str(name), ctypes.byref(h)) != 0:
        return None
    return h.value


def _operator_stand_in(dunder, generated, array_op, via=None, reflected=False):
    """A stand-in for NDArray.<dunder>(self, other) (a C object: operator_stand_ins.cc).

    An arithmetic operator (`via` given, e.g. `multiply`): MXNet's chain goes through ndarray.py's
    function `via` to `_ufunc_helper`, which calls `_internal.<generated>(self, float(other))` for
    a Python float or int and `op.<array_op>(self, other)` for an NDArray (`(other, self)` when
    `reflected`). An in-place operator (`via` None, `x += y`): MXNet's method checks
    self.writable, then makes those calls itself with out=self. Each is a generated function
    invoking its op. The guards: every function of the chain, and the generated functions'
    invoke and argument check (which passes for an NDArray), are still MXNet's own."""
    real = NDArray.__dict__[dunder]
    gen, arr = getattr(_internal, generated), getattr(_op_module, array_op)
    handle, arr_handle = _op_handle(generated), _op_handle(array_op)
    if handle is None or handle not in gen.__code__.co_consts:  # not the op the generated code invokes
        return real
    if arr_handle is None or arr_handle not in arr.__code__.co_consts:
        arr_handle = None
    # either function may be in place when a stand-in runs (op_functions.py adds its own to these lists)
    alt, arr_alt = (_GENERATED_STAND_INS.setdefault(name, [fn]) for name, fn in ((generated, gen), (array_op, arr)))
    nd_dict = _nd.__dict__
    chain = [(_GENERATED, "_imperative_invoke", [_INVOKE]),
             (_GENERATED, "_verify_all_legacy_ndarrays", [verify_all_legacy_ndarrays])]
    if via is not None:
        chain += [(nd_dict, via, [getattr(_nd, via)]), (nd_dict, "_ufunc_helper", [_UFUNC_HELPER])]
    scalar_guards = chain + [(nd_dict, "_internal", [_internal]), (_internal.__dict__, generated, alt)]
    array_guards = chain + [(nd_dict, "op", [_op_module]), (_op_module.__dict__, array_op, arr_alt)]
    in_place = via is None
    return _core.operator_stand_in(real, NDArray, False, handle, scalar_guards, arr_handle, array_guards, reflected,
                                   in_place=in_place, check_writable=in_place)


# dunder: the generated scalar op MXNet's chain ends in, the generated op for two NDArrays, the
# ndarray.py function it passes through, and whether the array op takes (other, self).
# _ufunc_helper(lhs, rhs, fn_array, fn_scalar, lfn_scalar, rfn_scalar): lhs NDArray and rhs
# numeric -> lfn_scalar(lhs, float(rhs)); lhs numeric -> rfn_scalar(rhs, float(lhs)), or
# lfn_scalar when the op commutes; rhs an NDArray -> fn_array(lhs, rhs)
_SCALAR_CHAINS = {
    "__add__": ("_plus_scalar", "broadcast_add", "add", False),
    "__sub__": ("_minus_scalar", "broadcast_sub", "subtract", False),
    "__rsub__": ("_rminus_scalar", "broadcast_sub", "subtract", True),
    "__mul__": ("_mul_scalar", "broadcast_mul", "multiply", False),
    "__truediv__": ("_div_scalar", "broadcast_div", "divide", False),
    "__rtruediv__": ("_rdiv_scalar", "broadcast_div", "divide", True),
}
# x op= y: the generated scalar op and the op for two NDArrays (x /= y is __itruediv__, which
# MXNet writes as self.__idiv__(other))
_IN_PLACE_CHAINS = {"__iadd__": ("_plus_scalar", "broadcast_add"), "__isub__": ("_minus_scalar", "broadcast_sub"),
                    "__imul__": ("_mul_scalar", "broadcast_mul"), "__idiv__": ("_div_scalar", "broadcast_div")}
_SCALAR_FAST = {name: _operator_stand_in(name, *chain)
                for name, chain in list(_SCALAR_CHAINS.items()) + list(_IN_PLACE_CHAINS.items())}
_SCALAR_REAL = {name: NDArray.__dict__[name]
                for name in list(_SCALAR_CHAINS) + list(_IN_PLACE_CHAINS) + ["__radd__", "__rmul__", "__neg__"]}


def _reflected(dunder, forward):
    """MXNet's __radd__ / __rmul__ are `self.__add__(other)` / `self.__mul__(other)`."""
    real, fast = NDArray.__dict__[dunder], _SCALAR_FAST[forward]

    def stand_in(self, other):
        if type(self) is NDArray and NDArray.__dict__.get(forward) is fast:
            return fast(self, other)
        return real(self, other)

    stand_in.__name__ = stand_in.__qualname__ = dunder
    stand_in.__doc__ = real.__doc__
    return stand_in


_SCALAR_FAST["__radd__"] = _reflected("__radd__", "__add__")
_SCALAR_FAST["__rmul__"] = _reflected("__rmul__", "__mul__")


def _make_neg():
    """MXNet's __neg__ is `_internal._mul_scalar(self, -1.0)`."""
    real, mul = NDArray.__dict__["__neg__"], _SCALAR_FAST["__mul__"]
    if mul is _SCALAR_REAL["__mul__"]:
        return real
    gen, handle = _internal._mul_scalar, _op_handle("_mul_scalar")
    internal, generated_globals, invoke = _internal, _GENERATED, _INVOKE
    alt = _GENERATED_STAND_INS.setdefault("_mul_scalar", [gen])

    def __neg__(self):
        if (type(self) is NDArray and _active() and _nd.__dict__.get("_internal") is internal
                and getattr(internal, "_mul_scalar", None) in alt
                and generated_globals.get("_imperative_invoke") is invoke
                and generated_globals.get("_verify_all_legacy_ndarrays") is verify_all_legacy_ndarrays):
            return invoke(handle, [self], ["scalar"], [-1.0], None, False, False)
        return real(self)

    __neg__.__doc__ = real.__doc__
    return __neg__


_SCALAR_FAST["__neg__"] = _make_neg()


def install():
    _register._verify_all_legacy_ndarrays = verify_all_legacy_ndarrays
    _register._verify_all_np_ndarrays = verify_all_np_ndarrays
    for name, prop in _FAST.items():
        setattr(NDArray, name, prop)
    for name, fn in _SCALAR_FAST.items():
        setattr(NDArray, name, fn)


def uninstall():
    _register._verify_all_legacy_ndarrays = _REAL_LEGACY
    _register._verify_all_np_ndarrays = _REAL_NP
    for name, prop in _REAL.items():
        setattr(NDArray, name, prop)
    for name, fn in _SCALAR_REAL.items():
        setattr(NDArray, name, fn)
