"""Exactness bug found by fuzz seed 6111096 on 2026-11-29 (present on e368c36, before that
session's changes), fixed the session after: one jit() graph that copies a value twice
(`a.copy()` and `a.copyto(b)`) where `b` is also an input of the graph gave other outputs wrong
values, with the engine synchronous too (MXNET_ENGINE_TYPE=NaiveEngine): `a18` came out as
`a12 + a20` instead of `a12 + a17`, and `a21` was wrong as well (fuse=False; with fuse=True this
small form agreed, the fuzz program differed both ways). Cause: MXNet's common-expression
elimination, which CachedOp runs on every graph it builds (MXNET_ELIMINATE_COMMON_EXPR, default 1,
read by dmlc::GetEnv when the CachedOp is made and at its first run on a context), merged the two
`_copy(a12)` nodes, two graph heads, one of them written into the input array `a20`. Eagerly every
op runs; minpy_jit now turns the pass off at import (minpy_jit/__init__.py). Exits 0 when eager and
jit() agree.

    PYTHONPATH=. .venv/bin/python tests/stress/repros/copy_twice_then_copyto_input.py
"""
import contextlib
import sys

import numpy as np
from mxnet import nd

import minpy_jit


def program(use_jit):
    rng = np.random.RandomState(6111096)
    a10, a17, a20 = (nd.array(rng.uniform(-2.0, 2.0, (5, 5, 1)), dtype="float32") for _ in range(3))
    with (minpy_jit.jit() if use_jit else contextlib.nullcontext()):
        a12 = a10 * 1.1
        a13 = a12.copy()  # noqa: F841 - needed: without this copy the graph is right
        a18 = a12 + a17
        a21 = nd.stack(a12, a20, axis=2)
        a12.copyto(a20)
    return {"a18": a18.asnumpy(), "a21": a21.asnumpy(), "a20": a20.asnumpy()}


if __name__ == "__main__":
    minpy_jit.config(fuse=False)
    eager, jitted = program(False), program(True)
    wrong = [name for name in eager if not np.array_equal(eager[name], jitted[name])]
    print("differ: %s" % wrong if wrong else "eager and jit() agree")
    sys.exit(1 if wrong else 0)
