"""Stand-ins for `mx.np.ndarray`'s arithmetic operators, acting while jit() has work (intercept.py).

`x * 1.01` on an `mx.np` array runs seven Python functions in MXNet before its op's invoke
(`__mul__` -> `mx.np.multiply` and its argument wrapper -> `mx.nd.np.multiply` and its wrapper
-> `_ufunc_helper` -> the generated `_npi.multiply_scalar`): 3.0 us an op recorded under jit(),
0.73 through the stand-in (the legacy NDArray's chain is frontend.py's).

The stand-ins (C objects, operator_stand_ins.cc) make the invoke that chain makes, with the same
arguments, when `self` is exactly an `mx.np.ndarray` and the other operand is exactly a Python
float or int (`[self]`, `['scalar']`, `[float(other)]`) or exactly an `mx.np.ndarray` (`[self,
other]`, or `[other, self]` for a reflected operator; no attributes), and every function of the
chain is still MXNet's own (checked on each call); `x += y` and the other in-place operators
make it with out=self, once `self.writable` holds where MXNet's method checks it. Anything else
-- bool or NumPy scalars, legacy arrays, a replaced function -- runs MXNet's method, so its
result and its errors are MXNet's. `-x` and `s * x` need no stand-in of their own: MXNet's `__neg__` and
`__rmul__` call `self.__mul__`.
"""
import mxnet.ndarray.numpy as _nd_np
import mxnet.numpy.multiarray as _multiarray
from mxnet.base import _is_np_op, _output_is_list
from mxnet.ndarray.numpy import _internal as _npi
from mxnet.ndarray.numpy import _op as _nd_np_op

from . import _core, frontend, op_functions

_NP_NDARRAY = _multiarray.ndarray

# dunder: (the mx.np function it calls, whether it passes (other, self), the _npi op for two
# arrays, the _npi op for an array and a scalar). _ufunc_helper(lhs, rhs, fn_array, fn_scalar,
# lfn_scalar, rfn_scalar): an array lhs and numeric rhs -> lfn_scalar(lhs, float(rhs)); a numeric
# lhs -> rfn_scalar(rhs, float(lhs)), or lfn_scalar when the op commutes; two arrays -> fn_array.
_CHAINS = {
    "__add__": ("add", False, "add", "add_scalar"),
    "__sub__": ("subtract", False, "subtract", "subtract_scalar"),
    "__rsub__": ("subtract", True, "subtract", "rsubtract_scalar"),
    "__mul__": ("multiply", False, "multiply", "multiply_scalar"),
    "__truediv__": ("divide", False, "true_divide", "true_divide_scalar"),
    "__rtruediv__": ("divide", True, "true_divide", "rtrue_divide_scalar"),
}


def _generated(name):
    """(MXNet's generated _npi function, the functions accepted in its place, its op handle),
    or None unless it is an np op generated to invoke one op with (is_np_op=True, output_is_list=False)."""
    gen = getattr(_npi, name, None)
    code = getattr(gen, "__code__", None)
    if code is None or code.co_filename != "<string>":
        return None
    op_name = "_npi_" + name
    handle = frontend._op_handle(op_name)
    if (handle is None or handle not in code.co_consts or op_name not in code.co_consts
            or not _is_np_op(op_name) or _output_is_list(op_name)):
        return None
    return gen, (gen, op_functions.stand_in_for(gen)), handle


def _stand_in(dunder, via, reflected, array_op, scalar_op, in_place=False, check_writable=False):
    """A stand-in for mx.np.ndarray.<dunder> (a C object: operator_stand_ins.cc), guarded by every
    function of MXNet's chain, the generated functions' invoke and their argument check (which
    passes for mx.np arrays)."""
    real = _NP_NDARRAY.__dict__[dunder]
    arrays, scalars = _generated(array_op), _generated(scalar_op)
    via_np, via_nd = getattr(_multiarray, via, None), getattr(_nd_np, via, None)
    if arrays is None or scalars is None or via_np is None or via_nd is not getattr(_nd_np_op, via, None):
        return real
    (gen, array_ok, array_handle), (_, scalar_ok, scalar_handle) = arrays, scalars
    op_dict, generated_globals = _nd_np_op.__dict__, gen.__globals__
    chain = [(_multiarray.__dict__, via, [via_np]), (_multiarray.__dict__, "_mx_nd_np", [_nd_np]),
             (_nd_np.__dict__, via, [via_nd]), (op_dict, "_ufunc_helper", [_nd_np_op._ufunc_helper]),
             (op_dict, "_npi", [_npi]), (generated_globals, "_imperative_invoke", [frontend._INVOKE]),
             (generated_globals, "_verify_all_np_ndarrays", [frontend.verify_all_np_ndarrays])]
    return _core.operator_stand_in(real, _NP_NDARRAY, True, scalar_handle,
                                   chain + [(_npi.__dict__, scalar_op, list(scalar_ok))], array_handle,
                                   chain + [(_npi.__dict__, array_op, list(array_ok))], reflected,
                                   in_place=in_place, check_writable=check_writable)


# x op= y: MXNet's method calls the same mx.np function with out=self, after checking
# self.writable (not for /=)
_IN_PLACE_CHAINS = {
    "__iadd__": ("add", False, "add", "add_scalar", True, True),
    "__isub__": ("subtract", False, "subtract", "subtract_scalar", True, True),
    "__imul__": ("multiply", False, "multiply", "multiply_scalar", True, True),
    "__itruediv__": ("divide", False, "true_divide", "true_divide_scalar", True, False),
}
_REAL = {name: _NP_NDARRAY.__dict__[name] for name in list(_CHAINS) + list(_IN_PLACE_CHAINS)}
_FAST = {name: _stand_in(name, *chain) for name, chain in list(_CHAINS.items()) + list(_IN_PLACE_CHAINS.items())}


def install():
    for name, fn in _FAST.items():
        setattr(_NP_NDARRAY, name, fn)


def uninstall():
    for name, fn in _REAL.items():
        setattr(_NP_NDARRAY, name, fn)
