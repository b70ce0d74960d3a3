"""Looking inside a jit() block without cutting its graph.

`debug_print(x, "loss {}")` records an identity op whose forward prints the
value when the compiled graph actually runs (like `jax.debug.print`). It does
not flush: the graph stays whole, and the print happens in execution order.
Outside jit() it prints at once. The returned array is `x` unchanged; using
it or not makes no difference (the print node is never dropped as dead).
"""
import sys

import mxnet as mx

_OP_TYPE = "minpy_jit_debug_print"


class _DebugPrint(mx.operator.CustomOp):
    def __init__(self, fmt):
        super().__init__()
        self._fmt = fmt

    def forward(self, is_train, req, in_data, out_data, aux):
        value = in_data[0].asnumpy()
        print(self._fmt.format(value), file=sys.stdout, flush=True)
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register(_OP_TYPE)
class _DebugPrintProp(mx.operator.CustomOpProp):
    def __init__(self, fmt="{}"):
        super().__init__(need_top_grad=True)
        self._fmt = fmt

    def list_arguments(self):
        return ["data"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _DebugPrint(self._fmt)


def debug_print(x, fmt="{}"):
    """Print `x` (formatted with `fmt.format(numpy_value)`) when the graph runs; returns x."""
    from . import _core
    if _core.depth() == 0:
        print(fmt.format(x.asnumpy()), flush=True)
        return x
    return mx.nd.Custom(x, op_type=_OP_TYPE, fmt=fmt)
