"""Which MXNet operators fail on a view of an array oneDNN left in its own layout?

MXNet 1.9.1's CPU `concat` can leave its result in oneDNN's blocked layout (which part shapes do
is oneDNN's choice: measured, (r, 1) + (r, w) along axis 1 for 2 <= r and w large enough, and
some 4-d ones). A *view* of such a result (`c[0]`, `c[0:1]`, `c.reshape(...)`) then makes some
ops fail while they run ("Check failed: !is_view", ndarray.cc): eagerly the call returns and the
first read of its result raises. minpy_jit must run those ops as eager MXNet does
(failures.cc), so this script measures them: every operator the op sweep (tests/opcases.py)
can call is run again with each float32 array argument replaced by a view of a oneDNN concat
result of the same shape (the concat's result itself, then views of three kinds), each op in a
forked process, and it is reported when the op's result reads where the plain array's does
but the view's raises, or the call itself raises.

    PYTHONPATH=$PWD .venv/bin/python tests/stress/find_onednn_view_failures.py [legacy|numpy]
    PYTHONPATH=$PWD .venv/bin/python tests/stress/find_onednn_view_failures.py concats   # which concats

Run it on demand (not in CI), after an MXNet upgrade, and keep failures.cc's rule equal to what
it prints.
"""
import itertools
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import mxnet as mx  # noqa: E402

import opcases  # noqa: E402
from find_runtime_failures import MXNET_ERRORS, in_child  # noqa: E402

# (rows, 1) + (rows, BASE_WIDTH) along axis 1 leaves oneDNN's layout (measured by `concats`):
# a flat slice of it is a view of any shape of up to 1024 elements.
BASE_ROWS, BASE_WIDTH = 16, 63


def reads(arrays):
    try:
        for a in arrays:
            a.wait_to_read()
        return True
    except MXNET_ERRORS:
        return False


def onednn_concat(data, rows, width):
    """concat((rows, 1), (rows, width), axis 1) holding `data` (flat, zero-padded) in row-major order."""
    flat = np.zeros(rows * (1 + width), np.float32)
    flat[:data.size] = data.reshape(-1)
    m = flat.reshape(rows, 1 + width)
    parts = [mx.nd.array(np.ascontiguousarray(m[:, :1])), mx.nd.array(np.ascontiguousarray(m[:, 1:]))]
    return mx.nd.concat(*parts, dim=1)


def is_onednn_concat(shapes, dim, dtype="float32"):
    """Whether concat of parts of these shapes leaves a result whose view fails `copy()`."""
    rs = np.random.RandomState(0)
    c = mx.nd.concat(*[mx.nd.array(rs.uniform(-2, 2, s), dtype=dtype) for s in shapes], dim=dim)
    return not reads([c.reshape((-1,)).copy()])


def views(a, np_arrays=False):
    """(label, array): arrays with a's shape and data on a oneDNN concat result's storage: the
    result itself (2-d shapes one concat makes), a reshape of the whole, a flat slice reshaped,
    a row (NDArray.__getitem__(int))."""
    shape, data = a.shape, a.asnumpy()
    n = data.size
    out = []
    # numpy's concatenate, reshape and slices do not give such views: a numpy op is given the
    # legacy view's storage (as_np_ndarray shares it)
    if np_arrays:
        with mx.util.np_array(False), mx.util.np_shape(False):
            return [(label, v.as_np_ndarray()) for label, v in views(mx.nd.array(data), False)]
    if len(shape) == 2 and shape[1] >= 2 and is_onednn_concat([(shape[0], 1), (shape[0], shape[1] - 1)], 1):
        out.append(("the concat result itself", onednn_concat(data, shape[0], shape[1] - 1)))
    for rows in range(2, n):
        if n % rows == 0 and n // rows >= 2 and is_onednn_concat([(rows, 1), (rows, n // rows - 1)], 1):
            whole = onednn_concat(data, rows, n // rows - 1)
            if whole.shape != shape:
                out.append(("a reshape of the whole %s" % (whole.shape,), whole.reshape(shape)))
            break
    if n <= BASE_ROWS * (1 + BASE_WIDTH):
        base = onednn_concat(data, BASE_ROWS, BASE_WIDTH)
        out.append(("a flat slice reshaped", base.reshape((-1,))[0:n].reshape(shape)))
    if len(shape) == 1 and n <= 40:
        row = np.zeros((2, n), np.float32)
        row[1] = data
        out.append(("a row", onednn_concat(row, 2, n - 1)[1]))
    return out


def audit_op(op, arrays, params):
    why = []
    for k, a in enumerate(arrays):
        if a.stype != "default" or a.dtype != np.float32 or not a.shape:
            continue
        for label, v in views(a, op.numpy):
            trial = [x.copy() for x in arrays]
            trial[k] = v
            plain = [x.copy() for x in arrays]  # the same data in MXNet's default layout
            try:
                ok_plain = reads(opcases.invoke(op, plain, params))
            except MXNET_ERRORS:
                ok_plain = False
            if not ok_plain:
                continue
            try:
                outs = opcases.invoke(op, trial, params)
            except MXNET_ERRORS as e:
                why.append("input %d %s %s: raised when called: %s" % (k, a.shape, label, str(e).splitlines()[-1][:80]))
                continue
            if not reads(outs):
                why.append("input %d %s %s: its result's first read raises" % (k, a.shape, label))
    return why


def audit(numpy_ops):
    found = {}
    cases = opcases.discover(numpy_ops)
    for name, (op, arrays, params) in sorted(cases.items()):
        why = in_child(audit_op, op, arrays, params)
        if why:
            found[name] = why
            for line in why:
                print(name, "|", line, flush=True)
    print("%d ops tried, %d fail on some view" % (len(cases), len(found)), flush=True)
    return found


def concats():
    """Which concat calls of two parts leave oneDNN's layout: 1-d to 4-d float32 parts, each axis,
    the other axes of size 1, 2, 3 or 8, the concatenated widths (1, 1), (1, 3), (1, 8), (2, 3), (8, 8)."""
    found = tried = 0
    for ndim in (1, 2, 3, 4):
        for dim in range(ndim):
            for rest in itertools.product((1, 2, 3, 8), repeat=ndim - 1):
                for w0, w1 in ((1, 1), (1, 3), (1, 8), (2, 3), (8, 8)):
                    s0, s1 = list(rest), list(rest)
                    s0.insert(dim, w0)
                    s1.insert(dim, w1)
                    tried += 1
                    if is_onednn_concat([tuple(s0), tuple(s1)], dim):
                        found += 1
                        print("concat of", tuple(s0), tuple(s1), "along", dim, flush=True)
    print("%d of %d concats leave oneDNN's layout" % (found, tried), flush=True)


def main():
    which = sys.argv[1:] or ["legacy", "numpy"]
    if which == ["concats"]:
        return concats()
    for numpy_ops in [False] * ("legacy" in which) + [True] * ("numpy" in which):
        if numpy_ops:
            mx.util.np_array(True).__enter__()
            mx.util.np_shape(True).__enter__()
        audit(numpy_ops)


if __name__ == "__main__":
    main()
