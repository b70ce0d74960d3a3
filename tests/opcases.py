"""Every MXNet operator, with inputs it accepts: the material of the op sweep in test_op_sweep.py.

The operators and their arguments come from MXNet's own registry (MXListAllOpNames,
MXSymbolGetAtomicSymbolInfo). For each one, candidate inputs are tried eagerly until MXNet
accepts one: a few generic shapes and dtypes for its array arguments, known values for its
required parameters, and hand-written cases for operators whose arrays must fit together
(convolution weights, embeddings, sequence lengths). Operators MXNet accepts no candidate for
are left out; `discover()` reports them.

Ops are called through `mxnet.ndarray.register._imperative_invoke`, the function every
generated `mx.nd` / `mx.np` wrapper calls (looked up at call time, so jit() records them).
"""
import ctypes
import sys

import mxnet as mx
import mxnet.ndarray.register as _register
import numpy as np
from mxnet.base import _LIB, OpHandle, c_str, check_call, py_str

# Ops a test must not call: they crash the process eagerly (MXNet's own bug), need a Python
# callback or a subgraph, read files, or are runtime internals rather than user operators.
NEVER_CALL = {
    "_contrib_quantize_asym": "segfaults eagerly on float input (MXNet 1.9.1)",
    "Custom": "needs a registered Python CustomOp",
    "_CustomFunction": "autograd.Function internals",
    "_CachedOp": "a subgraph handle", "_CachedOpThreadSafe": "a subgraph handle",
    "_foreach": "a subgraph", "_while_loop": "a subgraph", "_cond": "a subgraph",
    "_NDArray": "a Python callback", "_Native": "a Python callback",
    "_cvimread": "reads a file", "_cvimdecode": "decodes an image buffer", "_imdecode": "decodes an image buffer",
    "_set_value": "the legacy NDArray function API", "_onehot_encode": "the legacy NDArray function API",
    "fill_element_0index": "the legacy NDArray function API", "_copyto": "recorded as _copy/Cast (test_ops)",
    "_minpy_fused_elemwise": "our kernel: tested in test_kernels", "_minpy_multi_sgd_update": "our kernel",
    "_minpy_multi_sgd_mom_update": "our kernel",
}

# Values for required parameters, by name.
REQUIRED = dict(lr=0.1, wd=0.0, kernel=(2, 2), num_filter=2, output_dim=4, input_dim=3, num_hidden=2,
                shape=(2, 3), axis=0, begin=(0,), end=(1,), num_outputs=1, act_type="relu", depth=3, start=0,
                dtype="float32", block_size=2, low=0, high=3, t=1, eta=1.0, N=3, value=1.5, scale=2, threshold=0.5,
                eps=1e-5, a_min=0.2, a_max=0.6, reps=(2, 1), repeats=2, pad_width=(0, 0, 0, 0, 1, 1, 1, 1),
                mode="constant", nsize=3, lrs=(0.1,), wds=(0.0,), stype="default", num_arrays=2)


def _rs(seed=0):
    return np.random.RandomState(seed)


def floats(*shape, seed=0, np_arrays=False):
    a = _rs(seed).uniform(0.1, 0.9, size=shape).astype(np.float32)
    return mx.np.array(a) if np_arrays else mx.nd.array(a)


def ints(*shape, high=2, seed=1, np_arrays=False):
    a = _rs(seed).randint(0, high, size=shape).astype(np.int32)
    return mx.np.array(a, dtype="int32") if np_arrays else mx.nd.array(a, dtype="int32")


def spd(n=3, np_arrays=False):
    a = np.eye(n, dtype=np.float32) * 2 + 0.1
    return mx.np.array(a) if np_arrays else mx.nd.array(a)


# Operators whose arrays must fit together: (array builders, parameters) tried in order.
def _hand_cases():
    f, i = floats, ints
    return {
        "FullyConnected": [(lambda: [f(2, 3), f(4, 3), f(4)], dict(num_hidden=4))],
        "Convolution": [(lambda: [f(1, 2, 5, 5), f(3, 2, 3, 3), f(3)], dict(kernel=(3, 3), num_filter=3))],
        "Convolution_v1": [(lambda: [f(1, 2, 5, 5), f(3, 2, 3, 3), f(3)], dict(kernel=(3, 3), num_filter=3))],
        "Deconvolution": [(lambda: [f(1, 2, 4, 4), f(2, 3, 3, 3)], dict(kernel=(3, 3), num_filter=3, no_bias=True))],
        "Pooling": [(lambda: [f(1, 2, 4, 4)], dict(kernel=(2, 2), pool_type="max"))],
        "Pooling_v1": [(lambda: [f(1, 2, 4, 4)], dict(kernel=(2, 2), pool_type="avg"))],
        "BatchNorm_v1": [(lambda: [f(2, 3, 2, 2), f(3), f(3), f(3), f(3)], {})],
        "InstanceNorm": [(lambda: [f(2, 3, 4), f(3), f(3)], {})],
        "GroupNorm": [(lambda: [f(2, 4, 3), f(2), f(2)], dict(num_groups=2))],
        "Embedding": [(lambda: [i(2, 3, high=5), f(5, 4)], dict(input_dim=5, output_dim=4))],
        "LeakyReLU": [(lambda: [f(2, 3)], dict(act_type="elu")), (lambda: [f(2, 3), f(3)], dict(act_type="prelu"))],
        "reshape": [(lambda: [f(2, 3)], dict(shape=(3, 2)))],
        "Reshape": [(lambda: [f(2, 3)], dict(shape=(-1,)))],
        "softmax": [(lambda: [f(2, 3)], dict(axis=-1))],
        "crop": [(lambda: [f(2, 3)], dict(begin=(0, 0), end=(1, 2)))],
        "slice": [(lambda: [f(2, 3)], dict(begin=(0, 0), end=(1, 2)))],
        "slice_axis": [(lambda: [f(2, 3)], dict(axis=1, begin=0, end=2))],
        "broadcast_to": [(lambda: [f(1, 3)], dict(shape=(2, 3)))],
        "SequenceMask": [(lambda: [f(3, 2, 2), i(2, high=3)], dict(use_sequence_length=True))],
        "SequenceLast": [(lambda: [f(3, 2, 2), i(2, high=3) + 1], dict(use_sequence_length=True))],
        "SequenceReverse": [(lambda: [f(3, 2, 2), i(2, high=3) + 1], dict(use_sequence_length=True))],
        "moments": [(lambda: [f(2, 3)], dict(axes=(1,)))],
        "depth_to_space": [(lambda: [f(1, 4, 2, 2)], dict(block_size=2))],
        "softmax_cross_entropy": [(lambda: [f(2, 3), i(2, high=3).astype("float32")], {})],
        "scatter_nd": [(lambda: [f(2), i(1, 2, high=3)], dict(shape=(3,)))],
        "_scatter_set_nd": [(lambda: [f(3), f(2), i(1, 2, high=3)], dict(shape=(3,)))],
        "_slice_assign": [(lambda: [f(2, 3), f(1, 2)], dict(begin=(0, 0), end=(1, 2)))],
        "_crop_assign": [(lambda: [f(2, 3), f(1, 2)], dict(begin=(0, 0), end=(1, 2)))],
        "ravel_multi_index": [(lambda: [i(2, 3, high=2).astype("float32")], dict(shape=(2, 2)))],
        "_ravel_multi_index": [(lambda: [i(2, 3, high=2).astype("float32")], dict(shape=(2, 2)))],
        "unravel_index": [(lambda: [i(3, high=4).astype("float32")], dict(shape=(2, 2)))],
        "_unravel_index": [(lambda: [i(3, high=4).astype("float32")], dict(shape=(2, 2)))],
        "clip": [(lambda: [f(2, 3)], dict(a_min=0.2, a_max=0.6))],
        "tile": [(lambda: [f(2, 3)], dict(reps=(2, 1)))],
        "repeat": [(lambda: [f(2, 3)], dict(repeats=2, axis=1))],
        "pad": [(lambda: [f(1, 1, 2, 2)], dict(mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)))],
        "Pad": [(lambda: [f(1, 1, 2, 2)], dict(mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)))],
        "LRN": [(lambda: [f(1, 3, 2, 2)], dict(nsize=3))],
        "UpSampling": [(lambda: [f(1, 2, 2, 2)], dict(scale=2, sample_type="nearest", num_args=1))],
        "multi_sgd_update": [(lambda: [f(2, 3), f(2, 3, seed=1)], dict(lrs=(0.1,), wds=(0.0,), num_weights=1))],
        "multi_sgd_mom_update": [(lambda: [f(2, 3), f(2, 3, seed=1), f(2, 3, seed=2)],
                                  dict(lrs=(0.1,), wds=(0.0,), momentum=0.9, num_weights=1))],
        "multi_sum_sq": [(lambda: [f(2, 3), f(4)], dict(num_arrays=2))],
        "multi_all_finite": [(lambda: [f(2, 3), f(4)], dict(num_arrays=2))],
        "amp_multicast": [(lambda: [f(2, 3), f(4).astype("float16")], dict(num_outputs=2))],
        "cast_storage": [(lambda: [f(2, 3)], dict(stype="default"))],
        "_split_v2": [(lambda: [f(2, 4)], dict(indices=(0, 2), axis=1, sections=0))],
        "_square_sum": [(lambda: [f(2, 3).tostype("row_sparse")], dict(axis=1))],
        "_sparse_retain": [(lambda: [f(3, 2).tostype("row_sparse"), mx.nd.array([0, 2], dtype="int64")], {})],
        "RNN": [(lambda: [f(3, 2, 4), f(4 * 5 + 5 * 5 + 5 + 5), f(1, 2, 5)],
                 dict(state_size=5, num_layers=1, mode="rnn_tanh"))],
        "_arange": [(lambda: [], dict(start=0, stop=5))],
        "_linspace": [(lambda: [], dict(start=0, stop=1, step=0.25))],
        "_full": [(lambda: [], dict(shape=(2, 3), value=1.5))],
        "CTCLoss": [(lambda: [f(4, 2, 3), mx.nd.array([[1, 2], [1, 0]])], {})],
        "ctc_loss": [(lambda: [f(4, 2, 3), mx.nd.array([[1, 2], [1, 0]])], {})],
        "_contrib_CTCLoss": [(lambda: [f(4, 2, 3), mx.nd.array([[1, 2], [1, 0]])], {})],
        "_contrib_ctc_loss": [(lambda: [f(4, 2, 3), mx.nd.array([[1, 2], [1, 0]])], {})],
        "Crop": [(lambda: [f(1, 1, 4, 4)], dict(h_w=(2, 2), num_args=1))],
        "_contrib_BilinearResize2D": [(lambda: [f(1, 1, 2, 2)], dict(height=4, width=4))],
        "_contrib_box_nms": [(lambda: [f(4, 6)], {})],
        "_contrib_box_non_maximum_suppression": [(lambda: [f(4, 6)], {})],
        "_contrib_fft": [(lambda: [f(2, 4)], {})],
        "_contrib_ifft": [(lambda: [f(2, 8)], {})],
    }


HAND = _hand_cases()
SHAPE_FAMILIES = ("f23", "spd", "f2344", "f23+ints", "ints", "f3")


def _generic(family, n, np_arrays):
    f = lambda *s, seed=0: floats(*s, seed=seed, np_arrays=np_arrays)  # noqa: E731
    if family == "f23":
        return [f(2, 3, seed=k) for k in range(n)]
    if family == "spd":
        return [spd(np_arrays=np_arrays) for _ in range(n)]
    if family == "f2344":
        return [f(2, 3, 4, 4, seed=k) for k in range(n)]
    if family == "f23+ints":
        return [f(2, 3)] + [ints(2, np_arrays=np_arrays) for _ in range(n - 1)]
    if family == "ints":
        return [ints(2, 3, seed=k, np_arrays=np_arrays) for k in range(n)]
    return [f(3, seed=k) for k in range(n)]


def _choices(type_text):
    """The values of a parameter whose MXNet type text is an enumeration
    ("{'clip', 'raise', 'wrap'},optional, default='clip'") or a boolean; [] otherwise."""
    if type_text.startswith("{"):
        return [v.strip().strip("'") for v in type_text[1:type_text.index("}")].split(",")]
    if type_text.startswith("boolean"):
        return [True, False]
    return []


class OpDesc:
    def __init__(self, name, handle, args, key_var):
        self.name, self.handle, self.key_var = name, handle, key_var
        self.arrays = [(a, "[]" in t) for a, t in args if "NDArray" in t or "Symbol" in t]
        self.required = [a for a, t in args if "required" in t and "NDArray" not in t and "Symbol" not in t]
        self.params = [a for a, t in args]
        self.types = {a: t for a, t in args}  # MXNet's type text of each parameter
        # the values an enumerated or boolean parameter can take ({name: [values]}), for audits
        # that try each (a mode such as take's 'raise' may add checks that run with the op)
        self.choices = {a: _choices(t) for a, t in args if _choices(t)}
        self.numpy = name.startswith(("_npi", "_np_", "_npx"))


def op_table():
    """{op name: OpDesc} for every operator MXNet registers."""
    plist, size = ctypes.POINTER(ctypes.c_char_p)(), ctypes.c_uint()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(plist)))
    table = {}
    for name in sorted(py_str(plist[k]) for k in range(size.value)):
        h = OpHandle()
        check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(h)))
        real, desc, nargs = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_uint()
        names, types, descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
        key_var, ret = ctypes.c_char_p(), ctypes.c_char_p()
        check_call(_LIB.MXSymbolGetAtomicSymbolInfo(
            h, ctypes.byref(real), ctypes.byref(desc), ctypes.byref(nargs), ctypes.byref(names),
            ctypes.byref(types), ctypes.byref(descs), ctypes.byref(key_var), ctypes.byref(ret)))
        args = [(py_str(names[k]), py_str(types[k])) for k in range(nargs.value)]
        table[name] = OpDesc(name, h.value, args, py_str(key_var.value) if key_var.value else None)
    return table


def invoke(op, arrays, params):
    """The op on these arrays through MXNet's generated-wrapper path; always a list of results."""
    keys = list(params)
    vals = [params[k] for k in keys]
    return _register._imperative_invoke(op.handle, list(arrays), keys, vals, None, op.numpy, True)


def _candidates(op):
    """(array builder, parameters) pairs to try, most specific first."""
    yield from HAND.get(op.name, [])
    params = {}
    for a in op.required:
        if a == op.key_var:
            continue
        if a not in REQUIRED:
            return
        params[a] = REQUIRED[a]
    n_declared = len(op.arrays)
    variadic = any(v for _, v in op.arrays)
    counts = [2] if variadic else list(range(n_declared, 0, -1)) or [0]
    for n in counts:
        p = dict(params)
        if op.key_var and (variadic or op.key_var in op.required):
            p[op.key_var] = n
        if n == 0 and "shape" in op.params:
            p.setdefault("shape", (2, 3))
        for family in SHAPE_FAMILIES if n else ("none",):
            yield (lambda fam=family, n=n: _generic(fam, n, op.numpy)), p


def _skipped(op):
    return op.name in NEVER_CALL or "backward" in op.name or op.name.startswith(("_sg_", "_image_", "_minpy_"))


def accepted_candidate(op):
    """The index of the first candidate MXNet runs eagerly without error, or None."""
    if _skipped(op):
        return None
    for k, (build, params) in enumerate(_candidates(op)):
        try:
            arrays = build()
            mx.random.seed(7)
            outs = invoke(op, [a.copy() for a in arrays], params)
            for o in outs:
                o.wait_to_read()
            return k
        except Exception:  # noqa: BLE001 - a candidate MXNet refuses: try the next one
            continue
    return None


def _candidate_at(op, index):
    for k, (build, params) in enumerate(_candidates(op)):
        if k == index:
            return build(), params
    raise IndexError("%s has no candidate %d" % (op.name, index))


def _mode(numpy_ops):
    """np_shape/np_array semantics on for numpy operators (a context manager)."""
    import contextlib
    stack = contextlib.ExitStack()
    if numpy_ops:
        stack.enter_context(mx.util.np_shape(True))
        stack.enter_context(mx.util.np_array(True))
    return stack


def _discover_here(numpy_ops, after=None):
    """Print `name index` for each op, in order, as soon as it is known (read by discover())."""
    table = op_table()
    with _mode(numpy_ops):
        for name, op in table.items():
            if op.numpy != numpy_ops or (after is not None and name <= after):
                continue
            k = accepted_candidate(op)
            print(name, -1 if k is None else k, flush=True)
            try:
                mx.nd.waitall()  # no refused candidate's error is left for the next op
            except mx.MXNetError:
                pass


def _run_child(cmd, quiet_limit_s=120):
    """The (name, index) lines a discovery child printed, and whether it finished. A child silent
    for quiet_limit_s is killed: after heap corruption MXNet can also hang (a malloc lock)."""
    import select
    import subprocess
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines, finished = [], False
    try:
        while True:
            ready, _, _ = select.select([child.stdout], [], [], quiet_limit_s)
            if not ready:
                child.kill()
                break
            line = child.stdout.readline()
            if not line:
                break
            if line.startswith("END "):
                finished = True
                break
            lines.append(line.split())
    finally:
        child.kill()
        child.stdout.close()
        child.wait(timeout=60)
    return lines, finished


def discover(numpy_ops):
    """{op name: (OpDesc, arrays, params)} for every op (legacy or numpy) MXNet runs on some candidate.

    Candidates are tried in child processes: refused candidates are MXNet's error paths, and some
    of them corrupt MXNet's heap (seen as aborts or segfaults at a random later point). A child
    that dies is restarted at the op it died on; if it dies there twice, that op is left out.
    """
    import os
    accepted, after, died_on = {}, None, set()
    for _ in range(50):
        cmd = [sys.executable, os.path.abspath(__file__), "numpy" if numpy_ops else "legacy"]
        if after is not None:
            cmd.append(after)
        lines, finished = _run_child(cmd)
        for name, k in lines:
            if int(k) >= 0:
                accepted[name] = int(k)
        if finished:
            break
        table = op_table()
        done = [name for name, _ in lines]
        pending = [n for n, op in table.items() if op.numpy == numpy_ops and (after is None or n > after)
                   and n not in done]
        if not pending:
            break
        if pending[0] in died_on:
            after = pending[0]  # died there twice: left out
        else:
            died_on.add(pending[0])
            after = done[-1] if done else after
    found = {}
    table = op_table()
    with _mode(numpy_ops):
        for name, k in accepted.items():
            found[name] = (table[name],) + _candidate_at(table[name], k)
    return found


if __name__ == "__main__":
    _discover_here(sys.argv[1] == "numpy", sys.argv[2] if len(sys.argv) > 2 else None)
    print("END", "0", flush=True)
    import os
    os._exit(0)  # skips MXNet's exit-time destructors, which a corrupted heap can hang
