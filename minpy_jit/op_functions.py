"""C stand-ins for MXNet's generated `mx.nd` op functions, acting while jit() has work (intercept.py).

MXNet generates each legacy op's Python function from the op's metadata (mxnet/ndarray/register.py):
it collects the array arguments and the attributes given, checks the arrays, and calls
`_imperative_invoke(handle, ndargs, keys, vals, out, False, False)`. Inside jit() that Python is
much of an optimizer update's cost: 200 `nd.sgd_mom_update(w, g, m, lr=.., momentum=.., out=w)`
calls recorded took 2.0 us CPU each through MXNet's function, 1.45 us through the stand-in, 1.28 us
with `_core.invoke` called directly (medians of 3 alternating runs, load 3.4). MXNet's function
drops `name=`; the invoke's last two arguments are the op's is_np_op and output_is_list (False).

The stand-ins (op_functions.cc) make that same invoke call, with the same ndargs, keys and vals
(the caller's objects, in the same order), for the calls whose outcome they know: array
arguments and `out` exactly NDArrays, no `dtype` (converted with numpy), no keyword outside the
op's signature. Any other call, and every call while `_core.hooks_active()` is false, runs
MXNet's function. Each stand-in is made only for a function whose signature is the one MXNet's
generator writes for the op's metadata (MXSymbolGetAtomicSymbolInfo, read here again).

install() puts them in place of the generated functions in every loaded mxnet module (so
`nd.relu`, `nd.op.relu`, NDArray methods and Gluon layers calling `F.<op>`, mxnet.optimizer's
imported update functions); a function a user module imported by name before keeps MXNet's.
NumPy-interface ops (`mx.np`, `mx.npx`) are not covered.
"""
import ctypes
import sys
import types

import mxnet.ndarray.register as _register
from mxnet.base import _LIB, _Null, _is_np_op, _output_is_list, c_str, py_str

from . import _core, frontend

_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08


def _all_op_handles():
    """{handle value: op names} for every registered op (an alias shares its op's handle)."""
    size = ctypes.c_uint()
    names = ctypes.POINTER(ctypes.c_char_p)()
    if _LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(names)) != 0:
        return {}
    out = {}
    for i in range(size.value):
        name = py_str(names[i])
        h = ctypes.c_void_p()
        if _LIB.NNGetOpHandle(c_str(name), ctypes.byref(h)) == 0 and h.value:
            out.setdefault(h.value, set()).add(name)
    return out


def _op_arguments(handle):
    """(names, types) of an op's arguments, as MXNet's generator reads them."""
    real_name, desc, key_var_num_args, ret_type = (ctypes.c_char_p() for _ in range(4))
    num_args = ctypes.c_uint()
    arg_names, arg_types, arg_descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
    if _LIB.MXSymbolGetAtomicSymbolInfo(
            ctypes.c_void_p(handle), ctypes.byref(real_name), ctypes.byref(desc), ctypes.byref(num_args),
            ctypes.byref(arg_names), ctypes.byref(arg_types), ctypes.byref(arg_descs),
            ctypes.byref(key_var_num_args), ctypes.byref(ret_type)) != 0:
        return None
    n = num_args.value
    return [py_str(arg_names[i]) for i in range(n)], [py_str(arg_types[i]) for i in range(n)]


def _expected_layout(names, types_):
    """What MXNet's generator makes of an op's arguments: (array params, params in signature
    order after them, dtype present, var-args name or None). None if it would not generate."""
    arrays, others, dtype, var_args = [], [], False, None
    for name, atype in zip(names, types_):
        if name == "dtype":
            dtype = True
            others.append(name)
        elif atype.startswith("NDArray") or atype.startswith("Symbol"):
            if var_args:
                return None
            if atype.endswith("[]"):
                var_args = name
            else:
                arrays.append(name)
        else:
            others.append(name)
    return arrays, others, dtype, var_args


def _spec(fn, handles):
    """The stand-in's arguments for MXNet's generated function `fn`, or None if fn is not one
    this module knows to be generated from its op's metadata (then MXNet's stays)."""
    code = fn.__code__
    op_handles = [c for c in code.co_consts if type(c) is int and c in handles]
    if len(op_handles) != 1:
        return None
    handle = op_handles[0]
    # the op's name as the code passes it to the check (its aliases share the handle; the
    # function's own name may be one of them): a legacy op's, invoked with (False, False)
    op_names = {c for c in code.co_consts if type(c) is str and c in handles[handle]}
    if (not op_names or any(_is_np_op(n) or _output_is_list(n) for n in op_names)
            or any(c is True for c in code.co_consts)
            or "_imperative_invoke" not in code.co_names or "_verify_all_legacy_ndarrays" not in code.co_names):
        return None
    args = _op_arguments(handle)
    layout = args and _expected_layout(*args)
    if not layout:
        return None
    arrays, others, _dtype, var_args = layout
    if var_args:
        if (code.co_argcount != 0 or code.co_kwonlyargcount != 0
                or code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS) != (_CO_VARARGS | _CO_VARKEYWORDS)
                or code.co_varnames[:2] != (var_args, "kwargs") or fn.__defaults__ or fn.__kwdefaults__):
            return None
        return handle, (), 0, -1, True
    params = tuple(arrays + others + ["out", "name"])
    defaults = tuple([None] * len(arrays) + [_Null] * len(others) + [None, None])
    if (code.co_argcount != len(params) or code.co_kwonlyargcount != 0
            or code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS) != _CO_VARKEYWORDS
            or code.co_varnames[:len(params)] != params or fn.__kwdefaults__
            or len(fn.__defaults__ or ()) != len(defaults)
            or any(a is not b for a, b in zip(fn.__defaults__, defaults))):
        return None
    # the code's own name objects (interned: keyword names match them by identity)
    names = code.co_varnames[:len(params)]
    dtype_at = names.index("dtype") if "dtype" in names else -1
    return handle, names, len(arrays), dtype_at, False


def _generated_functions():
    """MXNet's generated legacy op functions, from the modules _init_op_module fills."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("mxnet.ndarray") or module is None:
            continue
        for value in list(vars(module).values()):
            if (type(value) is types.FunctionType and value.__globals__ is _register.__dict__
                    and value.__code__.co_filename == "<string>"):
                found[id(value)] = value
    return list(found.values())


def _make_stand_ins():
    _core.set_op_function_globals(_register.__dict__, _register.NDArrayBase, _Null, frontend._REAL_LEGACY,
                                  frontend.verify_all_legacy_ndarrays, _core.invoke)
    handles = _all_op_handles()
    stand_ins = {}
    for fn in _generated_functions():
        spec = _spec(fn, handles)
        if spec is not None:
            handle, params, n_arrays, dtype_at, var_args = spec
            stand_ins[fn] = _core.op_function(fn, handle, params, n_arrays, dtype_at, var_args)
    return stand_ins


STAND_INS = _make_stand_ins()  # MXNet's function -> its stand-in
for _accepted in frontend._GENERATED_STAND_INS.values():  # frontend's scalar stand-ins accept ours
    if STAND_INS.get(_accepted[0]) is not None:
        _accepted.append(STAND_INS[_accepted[0]])
_placed = []  # (module, attribute name, MXNet's function) where a stand-in went


def stand_in_for(fn):
    """The stand-in for MXNet's generated function fn (fn itself if it has none)."""
    try:
        return STAND_INS.get(fn, fn)
    except TypeError:
        return fn


def install():
    for name, module in list(sys.modules.items()):
        if not name.startswith("mxnet") or module is None:
            continue
        d = vars(module)
        for attr, value in list(d.items()):
            if type(value) is types.FunctionType and value in STAND_INS:
                d[attr] = STAND_INS[value]
                _placed.append((d, attr, value))


def uninstall():
    while _placed:
        d, attr, real = _placed.pop()
        if d.get(attr) is STAND_INS[real]:
            d[attr] = real
