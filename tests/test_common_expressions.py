"""Identical ops recorded twice stay two ops: MXNet's CachedOp would merge them (its common-expression
elimination, MXNET_ELIMINATE_COMMON_EXPR), and merging a copy written into an input array with
another copy of the same value gave other outputs of the graph swapped inputs (fuzz seed 6111096,
tests/stress/repros/copy_twice_then_copyto_input.py). minpy_jit turns the pass off at import
(minpy_jit/__init__.py)."""
import ctypes
import os

import numpy as np
import pytest
from mxnet import nd

import minpy_jit

from conftest import arr, assert_same, rand


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    yield


def _c_getenv(name):
    """The C environment's value (MXNet reads it with getenv), not os.environ's copy."""
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    return libc.getenv(name.encode())


def test_the_pass_is_off_in_the_process():
    assert os.environ.get("MXNET_ELIMINATE_COMMON_EXPR") == "0"
    assert _c_getenv("MXNET_ELIMINATE_COMMON_EXPR") == b"0"


def test_set_back_to_one_after_import_is_undone_before_a_graph_is_built(capsys):
    """A user who turns the pass on again after importing minpy_jit gets it turned off before
    jit() builds its next graph, with a warning, and the graph's values are eager's."""
    x = arr(rand(3, 4, seed=5))
    want = [x * 1.1, (x * 1.1).copy()]
    os.environ["MXNET_ELIMINATE_COMMON_EXPR"] = "1"
    try:
        with minpy_jit.jit():
            a = x * 1.1
            b = a.copy()
        assert_same(want, [a, b])
        assert _c_getenv("MXNET_ELIMINATE_COMMON_EXPR") == b"0"
        assert "MXNET_ELIMINATE_COMMON_EXPR was '1'; set back to 0" in capsys.readouterr().err
    finally:
        os.environ["MXNET_ELIMINATE_COMMON_EXPR"] = "0"


@pytest.mark.parametrize("fuse", [False, True])
def test_two_copies_one_written_into_an_input(fuse):
    minpy_jit.config(fuse=fuse)

    def program(a10, a17, a20):
        a12 = a10 * 1.1
        a13 = a12.copy()
        a18 = a12 + a17
        a21 = nd.stack(a12, a20, axis=2)
        a12.copyto(a20)
        return a12, a13, a18, a21

    inputs = [arr(rand(5, 5, 1, seed=s)) for s in (1, 2, 3)]
    eager_inputs = [x.copy() for x in inputs]
    want = program(*eager_inputs)
    for _ in range(2):
        jit_inputs = [x.copy() for x in inputs]
        with minpy_jit.jit():
            got = program(*jit_inputs)
        assert_same(want, got)
        assert_same(eager_inputs, jit_inputs)


def test_identical_ops_are_both_run():
    x = arr(rand(4, 3, seed=4))
    with minpy_jit.jit():
        a = nd.relu(x * 2.0)
        b = nd.relu(x * 2.0)
        b += 1
    assert np.array_equal(a.asnumpy(), np.maximum(x.asnumpy() * 2, 0))
    assert np.array_equal(b.asnumpy(), np.maximum(x.asnumpy() * 2, 0) + 1)
