"""Exactness bug found by fuzz seed 10376385 on 2026-11-29 (df53602), fixed in d48a220: an op
writing with out= into a slice of a 4-d concat's result. Eagerly MXNet's oneDNN op fails while it
runs into a view of an array oneDNN left in its layout ("Check failed: !is_view"): the slice keeps
its values and the concat no longer reads. Our graph ran the add. Writes into a view now run as
MXNet's op (record.cc, counted: "writes a view"). test_fuzz_found.py holds the same program.
Exits 0 when eager and jit() agree.

    PYTHONPATH=. .venv/bin/python tests/stress/repros/onednn_concat_slice_inplace_seed10376385.py
"""
import contextlib
import sys

import mxnet as mx
import numpy as np
from mxnet import nd

import minpy_jit


def program(use_jit):
    rng = np.random.RandomState(10376385)
    a16 = nd.array(rng.uniform(0.0, 0.5, (5, 5, 3, 1)), dtype="float32")
    a25 = nd.array(rng.uniform(-2.0, 2.0, (1, 5, 3, 3)), dtype="float32")
    with (minpy_jit.jit() if use_jit else contextlib.nullcontext()):
        a24 = nd.elemwise_add(a16[2:3], a16[2:3])
        a26 = nd.concat(a24, a25, dim=3)
        a28 = a26[:, 2:5]
        nd.elemwise_add(a28, a28, out=a28)
    seen = []
    for a in (a28, a26):
        try:
            seen.append(a.asnumpy().tobytes())
        except mx.MXNetError as e:
            seen.append("raised " + type(e).__name__)
    return seen


if __name__ == "__main__":
    eager, jitted = program(False), program(True)
    same = eager == jitted
    print("eager and jit() agree" if same else "differ: a28 %s, a26 %s" % tuple(
        "same" if e == j else "differs" for e, j in zip(eager, jitted)))
    sys.exit(0 if same else 1)
