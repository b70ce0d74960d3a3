"""Which arrays does jit() leave in another memory layout than eager MXNet? (issue 10; README here)

A oneDNN concat result ((3, 1) + (3, 3) along axis 1) or a Convolution result, then an op writing it,
eagerly and under jit(), in one trace or after a read; the probe is a copy of a row, which fails
exactly when the array is in oneDNN's blocked layout. Prints SAME/DIFF per program.

    PYTHONPATH=$PWD .venv/bin/python tests/stress/repros/onednn_layout_after_jit.py
"""
import mxnet as mx, numpy as np, minpy_jit, contextlib
from mxnet import nd
rs = np.random.RandomState(0)
A, B = rs.uniform(size=(3, 1)).astype('f'), rs.uniform(size=(3, 3)).astype('f')
D, W = rs.uniform(size=(2, 8, 6, 6)).astype('f'), rs.uniform(size=(8, 8, 3, 3)).astype('f')
SRC = {"concat": lambda: nd.concat(nd.array(A), nd.array(B), dim=1),
       "conv": lambda: nd.Convolution(nd.array(D), nd.array(W), no_bias=True, kernel=(3, 3), num_filter=8)}
def probe(c):
    try:
        c[0].copy().asnumpy(); return "default"
    except mx.MXNetError:
        return "onednn"
def inplace_sgd(c):
    nd.sgd_update(c, nd.ones(c.shape), lr=0.1, out=c)
OPS = {
    "none": lambda c: None,
    "read-only c*2": lambda c: c * 2,
    "c /= 2": lambda c: c.__itruediv__(2),
    "c += 1": lambda c: c.__iadd__(1),
    "c += c": lambda c: c.__iadd__(c),
    "c[:] = 0": lambda c: c.__setitem__(slice(None), 0),
    "relu out=c": lambda c: nd.relu(c, out=c),
    "Activation out=c": lambda c: nd.Activation(c, act_type="relu", out=c),
    "sgd_update out=c": inplace_sgd,
    "c[:] = c*2": lambda c: c.__setitem__(slice(None), c * 2),
    "copyto c": lambda c: (c * 3).copyto(c),
}
def run(use_jit, src, opname, split):
    # a site per program: one site compiling a graph per program would pass the recompile limit
    ctx = minpy_jit.jit(site="%s %s %s" % (src, opname, split)) if use_jit else contextlib.nullcontext()
    with ctx:
        c = SRC[src]()
        if split: c.wait_to_read()
        OPS[opname](c)
        keep = c * 1
    vals = keep.asnumpy()
    return probe(c), vals
for src in SRC:
    for opname in OPS:
        for split in (False, True):
            (le, ve), (lj, vj) = run(False, src, opname, split), run(True, src, opname, split)
            same = le == lj and np.array_equal(ve, vj)
            print("SAME" if same else "DIFF", src, opname, "split" if split else "one trace", "eager", le, "jit", lj, "" if np.array_equal(ve, vj) else "VALUES DIFFER")
