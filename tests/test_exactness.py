"""Wrapping code in jit() changes nothing observable: errors, late-typed results, sparse storage.

Every expectation comes from the same code run eagerly in the same process.
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import nd
from mxnet.base import MXNetError

import minpy_jit
from minpy_jit import OpInputError

from conftest import arr, rand


# ------------------------------------------------------------------ error text (issue 10, item 7)

def _eager_check_message(fn):
    """MXNet's own message for fn's failure, as eager code sees it (its last part)."""
    with pytest.raises(MXNetError) as ei:
        fn().wait_to_read()
    return str(ei.value).split("MXNetError: ")[-1]


BAD_SHAPES = {
    "dot": lambda: nd.dot(nd.ones((2, 3)), nd.ones((4, 5))),
    "broadcast_add": lambda: nd.ones((2, 3)) + nd.ones((4, 5)),
    "fully_connected": lambda: nd.FullyConnected(nd.ones((2, 3)), nd.ones((3, 7)), num_hidden=3, no_bias=True),
    "concat": lambda: nd.concat(nd.ones((2, 3)), nd.ones((4, 5)), dim=0),
    "elemwise_add": lambda: nd.elemwise_add(nd.ones((2, 3)), nd.ones((3, 2))),
}


@pytest.mark.parametrize("case", sorted(BAD_SHAPES))
def test_op_input_error_ends_with_mxnets_check_message(case):
    fn = BAD_SHAPES[case]
    eager_tail = _eager_check_message(fn)
    with pytest.raises(OpInputError) as ei:
        with minpy_jit.jit():
            fn()
    msg = str(ei.value)
    assert msg.endswith(eager_tail), (msg, eager_tail)
    # only the check itself: no C API call, no log timestamp or MXNet source position before it
    assert "[MXSymbol" not in msg and "Error in operator" not in msg and "../src/" not in msg, msg
    assert msg.startswith("operator '"), msg
