"""Random recorded programs with zero-gradient heads and early flushes, eager vs jit() (on demand).

    PYTHONPATH=. python tests/stress/zero_grad_sweep.py [PROGRAMS] [FIRST_SEED] [grad|backward|retain|two]
    MXNET_CPU_TEMP_COPY=64 PYTHONPATH=. python tests/stress/zero_grad_sweep.py 2000

Each program records, under autograd.record(), a few ops on variables (grad_req 'write' or 'add',
data with 0, +-inf and negatives, so that a derivative may be inf: 0 * inf = NaN where a
backward runs that eager's skips), with early flushes between them (a read, waitall,
minpy_jit.flush(), an sgd_update on plain arrays: an op outside the gradient graph, an
nd.array made inside the scope), then zero-gradient ops (comparisons, floor, argmax, argsort,
BlockGrad, uniform_like, where's condition, ...), and runs backward() (sometimes with
retain_graph, sometimes two heads) or autograd.grad (one head or several, head_grads, some of the
variables, create_graph False or True -- then sometimes a backward through the gradients' graph --,
retain_graph and a second call) from a zero head or a sum of a zero and a real one. It compares every variable's gradient, every value and the error raised, bit for
bit (NaN equal to NaN), and prints each differing seed with the program's lines; seeds within
2e-6 relative (our fused tanh/sigmoid/exp/log kernels, a few ulps from MXNet's) and seeds where
only the sign of a zero differs (-0 where eager has +0: a sum with a zero array where eager's pass
drops a zero node) are listed apart. Exit status 1 if any value differs.
"""
import contextlib
import os
import sys

import mxnet as mx
import numpy as np
from mxnet import autograd, nd

import minpy_jit

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 0.5, np.inf, -np.inf, 1e-3], np.float32)

UNARY = {
    "sqrt": "nd.sqrt({0})", "log": "nd.log({0})", "relu": "nd.relu({0})", "tanh": "nd.tanh({0})",
    "exp": "nd.exp({0})", "reciprocal": "nd.reciprocal({0})", "abs": "nd.abs({0})",
    "square": "nd.square({0})", "sigmoid": "nd.sigmoid({0})", "neg": "nd.negative({0})",
    "mul_s": "({0} * -1.5)", "add_s": "({0} + 0.5)", "rsqrt": "nd.rsqrt({0})", "cbrt": "nd.cbrt({0})",
    "sum": "nd.sum({0}, axis=1, keepdims=True)", "max": "nd.max({0}, axis=0, keepdims=True)",
}
BINARY = {
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "pow": "nd.broadcast_power({0}, {1})", "hypot": "nd.broadcast_hypot({0}, {1})",
    "maximum": "nd.broadcast_maximum({0}, {1})",
    "gemm2": "nd.linalg.gemm2({0}, {1}, transpose_b=True, alpha=0.5)",
}
ZERO = {
    "greater": "({0} > 0)", "floor": "nd.floor({0})", "argmax": "nd.argmax({0}, axis=1)",
    "argsort": "nd.argsort({0}, axis=1)", "BlockGrad": "nd.BlockGrad({0})",
    "uniform_like": "nd.random.uniform_like({0})", "equal": "nd.broadcast_equal({0}, {1})",
    "where": "nd.where({0} > 0, {0} * 0.5, {0} * 2.0)", "round": "nd.round({0})",
    "one_hot": "nd.one_hot(nd.argmax({0}, axis=1), 4)", "lesser_equal": "({0} <= {1})",
}
FLUSHES = [
    "{0}.asnumpy()",
    "nd.waitall()",
    "FLUSH()",
    "nd.sgd_update(PW, PG, lr=0.1, out=PW)",
    "nd.nag_mom_update(PW64, PG64, PM64, lr=0.37, momentum=0.9, out=PW64)",  # float64 (fuzz seed 1654883)
    "PA = nd.array([1.0, 2.0])",
    "{0}.wait_to_read()",
]


def generate(seed, only_kind=None):
    """The program's lines (run inside `with J():`) and its inputs; only_kind ("grad", ...) forces
    the way the gradient is taken."""
    rs = np.random.RandomState(seed)
    n_vars = rs.randint(1, 4)
    inputs = [rs.choice(SPECIAL, size=(3, 4)).astype(np.float32) for _ in range(n_vars)]
    reqs = [rs.choice(["write", "add"]) for _ in range(n_vars)]
    train = rs.rand() < 0.7
    lines = []
    vals = ["x%d" % i for i in range(n_vars)]
    lines.append("with autograd.record(train_mode=%s):" % train)
    for k in range(rs.randint(2, 9)):
        r = rs.rand()
        if r < 0.2:
            lines.append("    " + rs.choice(FLUSHES).format(rs.choice(vals)))
            continue
        name = "v%d" % k
        if r < 0.55:
            expr = UNARY[rs.choice(sorted(UNARY))].format(rs.choice(vals))
        else:
            expr = BINARY[rs.choice(sorted(BINARY))].format(rs.choice(vals), rs.choice(vals))
        lines.append("    %s = %s" % (name, expr))
        vals.append(name)
    heads = []
    for k in range(rs.randint(1, 3)):
        name = "z%d" % k
        a, b = rs.choice(vals), rs.choice(vals)
        if rs.rand() < 0.4:
            lines.append("    " + rs.choice(FLUSHES).format(rs.choice(vals)))
        lines.append("    %s = %s" % (name, ZERO[rs.choice(sorted(ZERO))].format(a, b)))
        if rs.rand() < 0.3:  # a real gradient beside the zero one
            lines.append("    %s = nd.cast(%s, 'float32') + %s * 0.25" % (name, name, rs.choice(vals)))
        heads.append(name)
    vals += heads
    kind = rs.choice(["backward", "backward", "retain", "two", "grad"])
    kind = only_kind or kind
    h = heads[0]
    if kind == "backward":
        lines.append("%s.backward()" % h)
    elif kind == "retain":
        lines.append("%s.backward(retain_graph=True)" % h)
        lines.append("%s.backward()" % heads[-1])
    elif kind == "two":
        lines.append("autograd.backward([%s])" % ", ".join(heads))
    else:
        lines += grad_call(np.random.RandomState(seed + 7919), heads, n_vars, vals)
    return inputs, reqs, lines, vals


def grad_call(rs, heads, n_vars, vals):
    """autograd.grad in its forms: one head or several, head_grads or none, some of the variables
    in any order, create_graph False or True, retain_graph; with create_graph=True the gradients'
    own graph is then used (a backward from their sum into the variables' buffers)."""
    lines = []
    hs = heads if rs.rand() < 0.5 else [heads[rs.randint(len(heads))]]
    xs = ["x%d" % i for i in rs.permutation(n_vars)[:rs.randint(1, n_vars + 1)]]
    args = ["[%s]" % ", ".join(hs), "[%s]" % ", ".join(xs)]
    if rs.rand() < 0.5:
        args.append("head_grads=[%s]" % ", ".join("nd.ones_like(%s) * %s" % (h, rs.choice(["0.5", "-2.0", "0.0"]))
                                                     for h in hs))
    create = rs.rand() < 0.4
    retain = rs.rand() < 0.3
    args.append("create_graph=%s" % create)
    if retain:
        args.append("retain_graph=True")
    if create:
        lines.append("with autograd.record():")
        lines.append("    GR = autograd.grad(%s)" % ", ".join(args))
        if rs.rand() < 0.5:
            lines.append("    GS = %s" % " + ".join("nd.sum(GR[%d])" % k for k in range(len(xs))))
            lines.append("GS.backward()")
            vals.append("GS")
    else:
        lines.append("GR = autograd.grad(%s)" % ", ".join(args))
    if retain:
        lines.append("GR2 = autograd.grad([%s], [%s])" % (hs[0], xs[0]))
        vals.append("GR2[0]")
    vals += ["GR[%d]" % k for k in range(len(xs))]
    return lines


def run(seed, use_jit, only_kind=None):
    inputs, reqs, lines, vals = generate(seed, only_kind)
    env = {"nd": nd, "autograd": autograd, "FLUSH": minpy_jit.flush if use_jit else (lambda: None),
           "PW": nd.ones((2,)), "PG": nd.ones((2,)), "PW64": nd.ones((2, 4), dtype="float64"),
           "PG64": nd.full((2, 4), 0.5, dtype="float64"), "PM64": nd.zeros((2, 4), dtype="float64")}
    for i, (a, req) in enumerate(zip(inputs, reqs)):
        x = nd.array(a)
        x.attach_grad(grad_req=req)
        env["x%d" % i] = x
    mx.random.seed(seed)
    error = None
    scope = minpy_jit.jit() if use_jit else contextlib.nullcontext()
    try:
        with scope:
            exec("\n".join(lines), env)
    except mx.base.MXNetError:  # OpInputError is jit()'s MXNetError, one that names the input
        error = "MXNetError"
    observed = []
    for i in range(len(inputs)):
        observed.append(("x%d.grad" % i, env["x%d" % i].grad))
    observed.append(("PW", env["PW"]))
    observed.append(("PW64", env["PW64"]))
    for v in vals:
        try:
            observed.append((v, eval(v, env)))
        except (KeyError, NameError, IndexError):
            observed.append((v, None))
    out = []
    for name, a in observed:
        try:
            out.append((name, None if a is None else a.asnumpy()))
        except mx.base.MXNetError as e:
            out.append((name, "raises " + type(e).__name__))
    return error, out, lines


def same(a, b, signed_zeros, rtol=0.0):
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind != "f":
            return np.array_equal(a, b)
        both_nan = np.isnan(a) & np.isnan(b)
        bits = "u%d" % a.itemsize  # float32 or float64 (the nag_mom_update's weights)
        if rtol:
            return bool(np.allclose(a, b, rtol=rtol, atol=0, equal_nan=True))
        if signed_zeros:
            return bool(((a.view(bits) == b.view(bits)) | both_nan).all())
        return bool(((a == b) | both_nan).all() and (a.view(bits)[a != 0] == b.view(bits)[a != 0]).all())
    return type(a) is type(b) and (a is None or a == b)


def difference(a_run, b_run, signed_zeros=True, rtol=0.0):
    (a_err, a_out, _), (b_err, b_out, _) = a_run, b_run
    if a_err != b_err:
        return "error: eager %s, jit() %s" % (a_err, b_err)
    for (name, a), (_, b) in zip(a_out, b_out):
        if not same(a, b, signed_zeros, rtol):
            show = lambda v: np.array2string(np.asarray(v), threshold=12) if v is not None else v  # noqa: E731
            return "%s: eager %s, jit() %s" % (name, show(a), show(b))
    return None


def main():
    programs = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    only_kind = sys.argv[3] if len(sys.argv) > 3 else None  # backward, retain, two or grad
    minpy_jit.config(recompile_limit=10 ** 9)
    differing, unsteady, zero_signs, ulps = [], [], [], []
    for seed in range(first, first + programs):
        if os.environ.get("SWEEP_VERBOSE"):
            print("seed", seed, flush=True)
        eager = run(seed, False, only_kind)
        jitted = run(seed, True, only_kind)
        diff = difference(eager, jitted, signed_zeros=False)
        if diff and difference(eager, run(seed, False, only_kind)):  # eager MXNet itself (gemm2 into 'add')
            unsteady.append(seed)
        elif diff and not difference(eager, jitted, rtol=2e-6):
            ulps.append(seed)  # our fused tanh/sigmoid/exp/log: a few float32 ulps from MXNet's (README)
        elif diff:
            differing.append(seed)
            print("seed %d differs: %s\n    %s" % (seed, diff, "\n    ".join(eager[2])), flush=True)
        elif difference(eager, jitted):
            zero_signs.append(seed)  # +0 where eager has -0 or the reverse, nothing else
    show = lambda seeds: " ".join(map(str, seeds)) or "-"  # noqa: E731
    print("%d programs (seeds %d..%d), %d differ: %s; eager differs from itself: %s; within 2e-6 (ulps of our "
          "fused transcendentals): %s; only the sign of a zero differs: %s" % (
              programs, first, first + programs - 1, len(differing), show(differing), show(unsteady), show(ulps),
              show(zero_signs)))
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
