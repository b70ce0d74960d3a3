"""Fuzz seed 1415001 (run of 2026-11-24 23:14 on d383674), reduced by hand: a14.grad
(grad_req='add') reads garbage under jit() (9e-44, 5e-44 ...) where eager keeps its zeros,
after a backward whose head (uniform_like) gives the ops before it a zero gradient, with an
sgd_update recorded under record() in the same trace. Exits 1 while they differ.

    PYTHONPATH=<checkout> python tests/stress/repros/repro_hand_1415001.py
"""
import mxnet as mx, numpy as np, contextlib
from mxnet import nd, autograd
import minpy_jit
def run(J, variant=0):
    RNG = np.random.RandomState(1415001)
    a9 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    a12 = nd.array(-np.eye(2) + 0.1 * RNG.uniform(-1, 1, (2, 2)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2,)), dtype='float32')
    a14.attach_grad(grad_req='add')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (4,)), dtype='float32')
    mx.random.seed(5)
    with J():
        with autograd.record():
            a15 = nd.tanh(a14)
            a16 = nd.linalg.gemm2(a14, a12, alpha=0.25)
            a17 = nd.tanh(a16)
            nd.sgd_update(a9, a18, lr=2.7, wd=0.07, out=a9)
            a19 = nd.random.uniform_like(a17, low=0, high=2.5)
            a20 = nd.relu(a19 * 1.0)
        a19.backward()
        g = a14.grad.asnumpy().copy()
        if variant: a21 = nd.argsort(a20, axis=1)
    return g
e = run(contextlib.nullcontext, 0)
j = run(minpy_jit.jit, 0)
print("a14.grad eager", e.ravel(), "jit()", j.ravel())
raise SystemExit(0 if np.array_equal(e.view(np.int32), j.view(np.int32)) else 1)
