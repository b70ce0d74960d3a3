"""MXNet's own (1.9.1), not minpy_jit's: the backward of linalg.gemm2 (and every op that uses
la_op.h's LaOpBackward) into a grad_req='add' gradient adds temp-workspace memory it never wrote.
LaOpBackward points a copy of its outputs at temp space for each kAddTo output, then calls the op
with the outputs themselves (not the copy), so the op overwrites the gradient, and `out += tspace`
adds whatever the temp workspace held. Eager MXNet gives the right value only while that memory
happens to be zero (a fresh process); jit() draws the workspace after other ops and shows it.
Found from fuzz seed 9936649 (2026-11-29). Without minpy_jit, one static CachedOp run before:

    python tests/stress/repros/mxnet_linalg_grad_add_reads_temp_space.py   # exit 1: MXNet erred

(10 of 20 backward() calls gave b garbage gradient elements in 2 of 4 processes; nd.dot: 0 of 80).
"""
import sys

import mxnet as mx
import numpy as np
from mxnet import autograd, nd

x = mx.sym.var("x")
static = mx.nd.CachedOp(mx.sym.abs(x) + 0.5, flags=[("static_alloc", "true"), ("static_shape", "true")])
wrong = 0
for trial in range(20):
    rng = np.random.RandomState(9936649)
    a = static(nd.array(rng.uniform(-2.0, 2.0, (1, 1)), dtype="float32")).copy()
    b = nd.array(rng.uniform(-2.0, 2.0, (1, 4)), dtype="float32")
    b.attach_grad(grad_req="add")  # zeros
    with autograd.record():
        y = nd.linalg.gemm2(a, b, alpha=-1.5)
    y.backward()
    wrong += not np.array_equal(b.grad.asnumpy(), np.full((1, 4), np.float32(-1.5) * a.asnumpy()[0, 0]))
print("%d of 20 backward() calls gave b a wrong gradient" % wrong)
sys.exit(1 if wrong else 0)
