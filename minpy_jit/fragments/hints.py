"""Ahead-of-time compilation from type hints (the Relay-from-Python design).

    @minpy_jit.function
    def mlp(x: minpy_jit.Tensor[(64, 784), "float32"], w: minpy_jit.Tensor[(784, 10)]):
        return nd.relu(nd.dot(x, w))

With every array argument annotated, the fragments whose inputs are known at
decoration (arguments, globals, closure variables) are captured on placeholder
arrays of the annotated shapes and compiled then, before any data exists; the
placeholders' recorded ops are dropped without running. A call whose annotated
argument has another shape or dtype raises ValueError naming the argument, the
expected and the actual shape -- the annotation is a contract, not a guard.

A fragment that would need array data, or whose capture is refused, is simply
compiled at its first call (the reason is logged).
"""
import inspect

import numpy as np
from mxnet import nd
from mxnet.ndarray.ndarray import NDArray

from .. import _core


class TensorHint:
    """The annotation object of `Tensor[shape, dtype]`."""

    def __init__(self, shape, dtype="float32"):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    def __repr__(self):
        return "minpy_jit.Tensor[%r, %r]" % (self.shape, self.dtype.name)

    def __eq__(self, other):
        return isinstance(other, TensorHint) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))


class Tensor:
    """`minpy_jit.Tensor[(64, 784), "float32"]`: an NDArray argument of that shape and dtype
    (dtype defaults to float32)."""

    def __class_getitem__(cls, params):
        if isinstance(params, tuple) and len(params) == 2 and isinstance(params[0], (tuple, list)):
            return TensorHint(params[0], params[1])
        if isinstance(params, (tuple, list)) and all(isinstance(d, int) for d in params):
            return TensorHint(params)
        raise TypeError("use minpy_jit.Tensor[(d0, d1, ...), 'dtype']")


class Hints:
    """The annotated arguments of a function, checked on every call."""

    def __init__(self, fn, hinted):
        self.fn_name = getattr(fn, "__qualname__", "function")
        self.signature = inspect.signature(fn)
        names = list(self.signature.parameters)
        self.hinted = [(names.index(name), name, hint) for name, hint in hinted.items()]

    def check(self, args, kwargs):
        for pos, name, hint in self.hinted:
            if pos < len(args):
                value = args[pos]
            elif name in kwargs:
                value = kwargs[name]
            else:
                continue  # a default: checked by the function's own code
            if not isinstance(value, NDArray):
                raise TypeError("%s(): argument `%s` is a %s, expected an NDArray %s (its annotation %r)"
                                % (self.fn_name, name, type(value).__name__, hint.shape, hint))
            shape = value.shape
            if shape != hint.shape:
                raise ValueError("%s(): argument `%s` has shape %s, expected %s (its annotation %r)"
                                 % (self.fn_name, name, shape, hint.shape, hint))
            if value.dtype != hint.dtype:
                raise ValueError("%s(): argument `%s` has dtype %s, expected %s (its annotation %r)"
                                 % (self.fn_name, name, np.dtype(value.dtype).name, hint.dtype.name, hint))

    def placeholders(self):
        """{name: a zero array of each annotated shape} (made eagerly, outside any scope)."""
        return {name: nd.zeros(hint.shape, dtype=hint.dtype) for _, name, hint in self.hinted}


def parse_hints(fn):
    annotations = getattr(fn, "__annotations__", None) or {}
    hinted = {k: v for k, v in annotations.items() if isinstance(v, TensorHint)}
    return Hints(fn, hinted) if hinted else None


def compile_ahead(function):
    """Captures and compiles, on placeholders, each fragment whose inputs are known now."""
    from .capture import Refusal
    plan, hints = function.plan, function.hints
    if _core.depth() > 0:  # decorated inside a jit() scope: its pending work must not be touched
        function.log("not compiled ahead of time: decorated inside a jit() scope")
        return []
    values = dict(hints.placeholders())
    for name, p in hints.signature.parameters.items():
        if name not in values and p.default is not inspect.Parameter.empty:
            values[name] = p.default
    fn = plan.fn
    compiled = []
    for frag in function.fragments:
        args = []
        missing = None
        for name in frag.inputs:
            if name in values:
                args.append(values[name])
            elif name in plan.locals or name in plan.params:
                missing = name
                break
            else:
                try:
                    from .analyze import _resolve
                    args.append(_resolve(plan, name, []))
                except LookupError:
                    missing = name
                    break
        if missing is not None:
            function.log("%s compiles at its first call: `%s` is not known before the call"
                         % (frag.label(), missing))
            continue
        try:
            frag.run_capture(args, discard=True)
            errors = _core.fragment_compile(frag.handle)
        except (Refusal, RuntimeError) as e:
            function.log("%s compiles at its first call: %s" % (frag.label(), e))
            continue
        if errors:
            function.log("%s: MXNet refused its graph ahead of time: %s" % (frag.label(), errors))
            continue
        compiled.append(frag.spec.index)
    function.ahead_of_time = compiled
    return compiled
