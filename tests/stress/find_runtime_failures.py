"""Which MXNet operators can fail while they run (after shape and type inference passed)?

An op that fails at run time stores its error on its output arrays in MXNet's engine; the
error surfaces at the first read. minpy_jit must never put such an op in a compiled graph
(record.cc: `can_fail`). This script finds them empirically: every operator the op sweep
(tests/opcases.py) can call is run again with adversarial data in each array argument --
zeros, negative, huge and NaN values, out-of-range indices, singular matrices -- and it is
reported when the call itself succeeds but reading a result raises.

    PYTHONPATH=$PWD .venv/bin/python tests/stress/find_runtime_failures.py

Run it on demand (not in CI) after an MXNet upgrade, and keep failures.cc's op_can_fail list
equal to what it prints.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mxnet as mx  # noqa: E402

import opcases  # noqa: E402


def variants(a):
    """Arrays of a's shape, dtype and kind with data an op may refuse at run time."""
    shape, dtype = a.shape, a.dtype
    make = (lambda x: mx.np.array(x, dtype=dtype)) if isinstance(a, mx.np.ndarray) else \
        (lambda x: mx.nd.array(x, dtype=dtype))
    out = {"zeros": np.zeros(shape), "ones": np.ones(shape), "negative": -3 * np.ones(shape),
           "huge": np.full(shape, 1e6), "big_index": np.full(shape, 1000), "neg_index": np.full(shape, -1000)}
    if np.dtype(dtype).kind == "f":
        out["nan"] = np.full(shape, np.nan)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        m = -np.ones(shape)
        out["indefinite"] = m
    return {k: make(v) for k, v in out.items()}


def audit(numpy_ops):
    found = {}
    cases = opcases.discover(numpy_ops)
    for name, (op, arrays, params) in sorted(cases.items()):
        for k, a in enumerate(arrays):
            if a.stype != "default":
                continue
            for label, bad in variants(a).items():
                trial = [x.copy() for x in arrays]
                trial[k] = bad
                try:
                    outs = opcases.invoke(op, trial, params)
                except mx.MXNetError:
                    continue  # refused when called: not a run-time failure
                for o in outs:
                    try:
                        o.wait_to_read()
                    except mx.MXNetError as e:
                        found.setdefault(name, []).append("input %d %s: %s" % (k, label, str(e).splitlines()[-1][:90]))
                        break
    return found


def main():
    for numpy_ops in (False, True):
        if numpy_ops:
            mx.util.np_array(True).__enter__()
            mx.util.np_shape(True).__enter__()
        for name, why in sorted(audit(numpy_ops).items()):
            print(name, "|", why[0], "(+%d more)" % (len(why) - 1) if len(why) > 1 else "")


if __name__ == "__main__":
    main()
