"""Errors minpy_jit raises, named after the user's mistake."""
from mxnet.base import MXNetError


class OpInputError(MXNetError, ValueError):
    """An operator was given inputs it cannot take (shapes, dtypes, count).

    Raised at the line that recorded the op, not at a later flush. The message
    names the op and every input's shape and dtype, then MXNet's own words.
    It derives from MXNetError, so code that catches MXNet's errors still does.
    """
