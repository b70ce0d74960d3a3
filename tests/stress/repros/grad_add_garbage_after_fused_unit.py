"""OPEN (found 2026-11-29 from fuzz seed 9936649): a gradient written with grad_req='add' through
linalg.gemm2, whose other input comes from a fused unit recorded under autograd.record(), gets
garbage in some elements under jit(): eager's a28.grad is -1.5 * a27 in every element. This script
differed in 1 of 5 fresh runs (elements 0 and 2 off); variants of it (a1.grad read too, the
harness's order of reads) in 4 of 4 with pool_per_aval=0 and about half with the default pool.
Not seen with fuse=False (8 of 8), with grad_req='write' or with nd.dot instead of gemm2 (6 of 6);
still seen with MXNET_ENGINE_TYPE=NaiveEngine (not a race between engine operations); rarer, not
gone, with direct_kernels=False. Eager MXNet with gemm2 in a static_alloc hybridized block: 8 of 8
agree. Looks like memory the backward reads or adds into being reused; not found yet.

    PYTHONPATH=<checkout> python tests/stress/repros/grad_add_garbage_after_fused_unit.py  # exit 1: differs
"""
import contextlib
import sys

import numpy as np
from mxnet import autograd, nd

import minpy_jit


def run(use_jit):
    rng = np.random.RandomState(9936649)
    a1 = nd.array(rng.uniform(-2.0, 2.0, (1, 1)), dtype="float32")
    a1.attach_grad()
    a28 = nd.array(rng.uniform(-2.0, 2.0, (1, 4)), dtype="float32")
    a28.attach_grad(grad_req="add")
    a2 = nd.sigmoid(a1)
    with minpy_jit.jit() if use_jit else contextlib.nullcontext():
        with autograd.record():
            a27 = nd.abs(a2) + 0.5  # one fused unit
            a29 = nd.linalg.gemm2(a27, a28, alpha=-1.5)
        a29.backward()
    return a28.grad.asnumpy(), a27.asnumpy(), a2.asnumpy(), a29.asnumpy()


if __name__ == "__main__":
    eager = run(False)[0]
    minpy_jit.config(pool_per_aval=0)
    jitted = run(True)[0]
    same = np.array_equal(eager.view(np.uint32), jitted.view(np.uint32))
    print("eager and jit() agree" if same else "a28.grad: eager %s, jit() %s" % (eager.ravel(), jitted.ravel()))
    sys.exit(0 if same else 1)
