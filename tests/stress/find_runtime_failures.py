"""Which MXNet operators can fail while they run (after shape and type inference passed)?

An op that fails at run time stores its error on its output arrays in MXNet's engine; the
error surfaces at the first read. minpy_jit must never put such an op in a compiled graph
(record.cc: `can_fail`). This script finds them empirically: every operator the op sweep
(tests/opcases.py) can call is run again with adversarial data in each array argument --
zeros, negative, huge and NaN values, out-of-range indices, singular matrices -- and with 6
and 7 axes (leading axes added to every array), each op in a forked process, and it is
reported when the call itself succeeds but reading a result raises (or the process dies).

    PYTHONPATH=$PWD .venv/bin/python tests/stress/find_runtime_failures.py [legacy|numpy]

Run it on demand (not in CI) after an MXNet upgrade, and keep failures.cc's op_can_fail list
and fail_rule table equal to what it prints. It also calls each op with every value of each
enumerated or boolean parameter (take's mode='raise'). A sampler's scalar parameters are not
varied here: failures.cc's sampler rules come from calls by hand (scale -1, p 1.5, low > high).
"""
import os
import select
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mxnet as mx  # noqa: E402

import opcases  # noqa: E402


# MXNet raises some op errors as Python's own ValueError or IndexError (a sampler's parameter
# check, gather_nd's index check), not as MXNetError
MXNET_ERRORS = (mx.MXNetError, ValueError, IndexError)


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


def ranked(arrays, ndim):
    """The op's arrays with leading axes of size 2 added, so the first has ndim axes (MXNet's
    kernels are compiled for at most 5 axes; some find out only while they run)."""
    extra = ndim - len(arrays[0].shape) if arrays and arrays[0].stype == "default" else 0
    if extra <= 0:
        return None
    return [a.reshape((1,) * extra + a.shape).broadcast_to((2,) * extra + a.shape).copy()
            if a.stype == "default" and len(a.shape) else a for a in arrays]


def trials(arrays):
    """(label, arrays): each array argument in turn replaced by adversarial data, then all
    arrays given 6 and 7 axes."""
    for k, a in enumerate(arrays):
        if a.stype != "default":
            continue
        for label, bad in variants(a).items():
            trial = [x.copy() for x in arrays]
            trial[k] = bad
            yield "input %d %s" % (k, label), trial
    for ndim in (6, 7):
        trial = ranked(arrays, ndim)
        if trial is not None:
            yield "%d axes" % ndim, trial


def settings(op, params):
    """(label, params): the op's parameters as the sweep calls it, then with each enumerated or
    boolean parameter set in turn to each other value (take's mode='raise' checks its indices
    while it runs; the sweep's own call uses the default 'clip')."""
    yield "", params
    for name, values in sorted(op.choices.items()):
        if name == op.key_var:
            continue
        for value in values:
            if str(params.get(name)) != str(value):
                yield " with %s=%s" % (name, value), dict(params, **{name: value})


def audit_op(op, arrays, params):
    """Why the op failed at run time, per trial that was accepted when called."""
    why = []
    for setting, call_params in settings(op, params):
        why += audit_call(op, arrays, call_params, setting)
    return why


def audit_call(op, arrays, params, setting):
    why = []
    for label, trial in trials(arrays):
        label += setting
        try:
            outs = opcases.invoke(op, trial, params)
        except MXNET_ERRORS:
            continue  # refused when called: not a run-time failure
        for o in outs:
            try:
                o.wait_to_read()
            except MXNET_ERRORS as e:
                why.append("%s: %s" % (label, str(e).splitlines()[-1][:90]))
                break
    return why


def in_child(fn, *args, timeout_s=120):
    """fn(*args) (a list of strings) in a forked process: some ops crash MXNet on such input
    (CTCLoss) or run for ever, which is reported as a finding instead of ending the audit."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = "\n".join(fn(*args))
        except BaseException as e:  # noqa: BLE001 - reported by the parent
            out = "the audit raised %s: %s" % (type(e).__name__, e)
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    chunks, deadline = [], time.time() + timeout_s
    while True:  # read until the child closes the pipe, or give up on it
        ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.time()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return ["".join(chunks)] * bool(chunks) + ["no result within %d s (killed)" % timeout_s]
        data = os.read(r, 65536)
        if not data:
            break
        chunks.append(data.decode(errors="replace"))
    os.close(r)
    _, status = os.waitpid(pid, 0)
    lines = [x for x in "".join(chunks).split("\n") if x]
    if status:
        lines.append("the process crashed (wait status %d)" % status)
    return lines


def audit(numpy_ops):
    found = {}
    cases = opcases.discover(numpy_ops)
    for name, (op, arrays, params) in sorted(cases.items()):
        why = in_child(audit_op, op, arrays, params)
        if why:
            found[name] = why
            for line in why:
                print(name, "|", line, flush=True)
    return found


def main():
    which = sys.argv[1:] or ["legacy", "numpy"]  # or just one of them
    for numpy_ops in [False] * ("legacy" in which) + [True] * ("numpy" in which):
        if numpy_ops:
            mx.util.np_array(True).__enter__()
            mx.util.np_shape(True).__enter__()
        audit(numpy_ops)  # prints each finding as it is found


if __name__ == "__main__":
    main()
