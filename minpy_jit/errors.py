"""Errors minpy_jit raises, named after the user's mistake."""
from mxnet.base import MXNetError, c2pyerror, error_types


class OpInputError(MXNetError, ValueError):
    """An operator was given inputs it cannot take (shapes, dtypes, count).

    Raised at the line that recorded the op, not at a later flush. The message
    names the op and every input's shape and dtype, then MXNet's own words.
    It derives from MXNetError, so code that catches MXNet's errors still does.
    """


def mxnet_error(text, note=""):
    """The exception eager MXNet raises for MXGetLastError's `text` (mxnet.base.get_last_ffi_error:
    its type from the text's first word, its stack before the message), for an error MXNet raised
    inside our runtime (a graph that failed while it ran, a C API call of ours). `note`, where in
    our runtime it happened, is the exception's note: shown in the traceback, not in str(e)."""
    msg, err_type = c2pyerror(text)
    if err_type is not None and err_type.startswith("mxnet.error."):
        err_type = err_type[10:]
    err = error_types.get(err_type, MXNetError)(msg)
    if note and hasattr(err, "add_note"):
        err.add_note(note)
    return err
