"""Every operator MXNet registers, differentiated under jit() and eagerly: the gradients of its
float inputs equal eager's bit for bit, and a backward that raises eagerly raises under jit().

The operators and inputs come from tests/opcases.py (the forward sweep's, test_op_sweep.py).
Each op runs under autograd.record() on inputs with gradient buffers; the loss is the sum of
its float results times fixed weights, so every result gets a gradient of its own. Found by this
sweep when it was written: Embedding's backward raised under jit() (its kernel refuses a request
for its data's gradient, which our in-graph backward made); the regression outputs, CTC losses and
index_copy gave their label's (index's) gradient garbage where eager leaves the buffer as it was
(their kernels never write it); so did SoftmaxOutput's label; Deconvolution's backward failed in
oneDNN in our graph; MultiBoxPrior's crashed CachedOp's gradient pass; `x * <default scalar>`
fused had gradient 0 (we read a missing `scalar` as 0, MXNet's default is 1).

The replayed variants run the same trace with a write through a view in front of the op, which
makes jit() replay the trace op by op (MXNet's autograd records each op): that path's gradients
are held to eager's bits too.
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd

import minpy_jit

import opcases
from conftest import jit_or_eager

LEGACY_OPS = opcases.discover(numpy_ops=False)
NUMPY_OPS = opcases.discover(numpy_ops=True)
# Differentiating it on the sweep's input kills eager MXNet itself (exit status 255).
CRASHES_EAGER = {"reset_arrays"}
# Known differences, each checked to be exactly this: eager's backward of image_to_tensor fails
# in MXNet's own dtype inference ("Incompatible attr in node ... backward"); our graph's infers
# the gradient's dtype and runs it.
KNOWN = {"_npx__image_to_tensor": ("raised MXNetError", "gradients")}


def _bits(a):
    a = a.asnumpy()
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]) if a.dtype.kind == "f" else a


def _write_through_a_view():
    """In a trace, makes jit() replay that trace op by op (as test_fallbacks_visible shows)."""
    x = mx.nd.arange(8)
    view = x[2:6]
    view += 1
    x += 2


def _differentiate(op, arrays, params, use_jit, replayed=False):
    """(gradients of the float inputs as numpy bits, or the exception type name)."""
    try:  # an earlier op's run-time error left on MXNet's shared state is raised here, not later
        mx.nd.waitall()
    except mx.MXNetError:
        pass
    mx.random.seed(7)
    ins = [a.copy() for a in arrays]
    floats = [a for a in ins if np.dtype(a.dtype).kind == "f" and a.stype == "default"]
    for a in floats:
        a.attach_grad()
    try:
        with jit_or_eager(use_jit):
            with autograd.record():
                if replayed:
                    _write_through_a_view()
                outs = opcases.invoke(op, ins, params)
                terms = [(o * (1.0 + 0.25 * k)).sum() for k, o in enumerate(outs)
                         if np.dtype(o.dtype).kind == "f" and o.stype == "default"]
                if not terms:
                    return "no float result"
                loss = terms[0]
                for t in terms[1:]:
                    loss = loss + t
            loss.backward()
            return [_bits(a.grad) for a in floats]
    except mx.MXNetError as e:
        return "raised " + type(e).__name__


def _sweep_one(op, arrays, params, replayed=False):
    eager = _differentiate(op, arrays, params, False)
    replays = minpy_jit.stats()["eager_replays"]
    jitted = _differentiate(op, arrays, params, True, replayed)
    assert minpy_jit.stats()["eager_replays"] > replays or not replayed, op.name
    outcome = (eager if isinstance(eager, str) else "gradients", jitted if isinstance(jitted, str) else "gradients")
    if op.name in KNOWN:
        assert outcome == KNOWN[op.name], (op.name, outcome)
        return
    if isinstance(eager, str) or isinstance(jitted, str):
        assert eager == jitted, (op.name,) + outcome
        return
    assert len(eager) == len(jitted)
    for k, (e, j) in enumerate(zip(eager, jitted)):
        assert e.shape == j.shape and np.array_equal(e, j), "%s: gradient of input %d differs from eager's in %d elements" % (
            op.name, k, int((e != j).sum()) if e.shape == j.shape else -1)


@pytest.mark.parametrize("replayed", [False, True], ids=["graph", "replayed"])
@pytest.mark.parametrize("name", sorted(set(LEGACY_OPS) - CRASHES_EAGER))
def test_every_op_gradient_is_eagers(name, replayed, no_recompile_limit):
    _sweep_one(*LEGACY_OPS[name], replayed=replayed)


@pytest.mark.parametrize("replayed", [False, True], ids=["graph", "replayed"])
@pytest.mark.parametrize("name", sorted(NUMPY_OPS))
def test_every_numpy_op_gradient_is_eagers(name, replayed, no_recompile_limit):
    with mx.util.np_shape(True), mx.util.np_array(True):
        _sweep_one(*NUMPY_OPS[name], replayed=replayed)
