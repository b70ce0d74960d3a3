"""Which MXNet ops give their inputs MXNet's zero gradient node (run on demand, not in CI).

    PYTHONPATH=. python tests/stress/find_zero_gradient_ops.py

The source of parts.cc's zero_gradient_inputs table. An op's FGradient that is MakeZeroGradNodes
(or hands `zeros_like` to one input) makes eager's gradient pass skip every op whose output
gradients are all such zero nodes. Probe: input k of the op is `data + sqrt(z)` with z = 0 a
variable; sqrt's backward turns any computed gradient into inf or NaN (g * inf), so z.grad is 0
only when MXNet's pass skipped sqrt, i.e. the op gave input k the zero node. Each candidate is
called through the generated-wrapper path with float32 (2, 3) inputs; prints ZERO / RUNS per input.
"""
import ctypes

import mxnet as mx
import mxnet.ndarray.register as reg
import numpy as np
from mxnet import autograd, nd
from mxnet.base import _LIB, OpHandle, c_str, check_call

# name, number of array inputs, parameters
CANDIDATES = [(n, 1, {}) for n in ("floor ceil round rint fix trunc sign BlockGrad stop_gradient zeros_like "
                                   "ones_like logical_not argmax_channel argsort shape_array size_array relu abs "
                                   "_contrib_round_ste _contrib_sign_ste _npi_floor _npi_ceil _npi_rint _npi_fix "
                                   "_npi_trunc _npi_sign _npi_around _npi_logical_not _npi_isnan _npi_isinf "
                                   "_npi_isfinite _npi_isposinf _npi_isneginf _npi_argsort").split()]
CANDIDATES += [(n, 2, {}) for n in ("_equal _not_equal _greater _greater_equal _lesser _lesser_equal broadcast_equal "
                                    "broadcast_not_equal broadcast_greater broadcast_greater_equal broadcast_lesser "
                                    "broadcast_lesser_equal _logical_and _logical_or _logical_xor "
                                    "broadcast_logical_and broadcast_logical_or broadcast_logical_xor broadcast_like "
                                    "_identity_with_attr_like_rhs reshape_like broadcast_hypot broadcast_power _mod "
                                    "broadcast_mod _npi_equal _npi_not_equal _npi_greater _npi_greater_equal "
                                    "_npi_less _npi_less_equal _npi_copysign _npi_mod").split()]
CANDIDATES += [(n, 1, {"scalar": 0.5}) for n in ("_equal_scalar _not_equal_scalar _greater_scalar "
                                                 "_greater_equal_scalar _lesser_scalar _lesser_equal_scalar "
                                                 "_logical_and_scalar _logical_or_scalar _logical_xor_scalar "
                                                 "_npi_equal_scalar _npi_not_equal_scalar _npi_greater_scalar "
                                                 "_npi_greater_equal_scalar _npi_less_scalar "
                                                 "_npi_less_equal_scalar _mod_scalar").split()]
CANDIDATES += [("argmax", 1, {"axis": 1}), ("argmin", 1, {"axis": 1}), ("topk", 1, {"k": 1}),
               ("one_hot", 1, {"depth": 3}), ("_npi_argmax", 1, {"axis": 1}), ("_npi_argmin", 1, {"axis": 1}),
               ("_npi_full_like", 1, {"fill_value": 2}), ("max", 1, {"axis": 0}), ("sum", 1, {}),
               ("clip", 1, {"a_min": 0.2, "a_max": 0.6}), ("where", 3, {}), ("_npi_where", 3, {})]
CANDIDATES += [(n, 1, {}) for n in ("_random_uniform_like _random_normal_like _random_gamma_like "
                                    "_random_exponential_like _random_poisson_like _random_negative_binomial_like "
                                    "_random_generalized_negative_binomial_like _sample_exponential "
                                    "_sample_poisson").split()]
CANDIDATES += [(n, 2, {}) for n in ("_sample_uniform _sample_normal _sample_gamma _sample_negative_binomial "
                                    "_sample_generalized_negative_binomial").split()]


def op_handle(name):
    h = OpHandle()
    check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(h)))
    return h.value


def probe(name, nin, params, k, shape=(2, 3)):
    data = [nd.array(np.random.RandomState(i).uniform(0.1, 0.9, shape)) for i in range(nin)]
    z = nd.zeros(shape)
    z.attach_grad()
    numpy_op = name.startswith("_np")
    with autograd.record():
        ins = list(data)
        ins[k] = data[k] + nd.sqrt(z)
        if numpy_op:
            ins = [a.as_np_ndarray() for a in ins]
        outs = reg._imperative_invoke(op_handle(name), ins, list(params), [str(v) for v in params.values()],
                                      None, numpy_op, True)
    head = outs[0].as_nd_ndarray() if numpy_op else outs[0]
    autograd.backward([head])
    g = z.grad.asnumpy()
    return "ZERO" if np.all(g == 0) else "RUNS"


if __name__ == "__main__":
    for name, nin, params in CANDIDATES:
        for k in range(nin):
            try:
                result = probe(name, nin, params, k)
            except mx.base.MXNetError as e:
                result = "refused: " + str(e).strip().splitlines()[0][:80]
            print("%-28s input %d  %s" % (name, k, result))
