"""minpy_jit fuzz reproducer: seed 11004645 (repro_seed11004645.py), reduced by hand to 13 statements.

A concat reads a5, which the rmsprop_update of the same loop iteration mutated in place (its
state n) in an earlier flush; under jit() it sometimes sees a5 one or two updates behind. Timing:
run it under load, e.g. with `yes > /dev/null &` beside it (12-17 of 24 runs differ; idle, 0 of 48):

    PYTHONPATH=. .venv/bin/python tests/stress/repros/loop_repro.py tests/stress/repros/repro_seed11004645_min.py 24
"""
# ---------------------------------------------------------------- harness (tests/stress/fuzz_harness.py)
import contextlib

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd  # noqa: F401  (the programs use them)

import minpy_jit

# Tolerances of compare_runs(exact=False), kept for the reproducers written before every program
# was held to bits (fuzz_gen.Program.exact); the fuzzer itself compares bit for bit.
RTOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}
ATOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-12}


class Boom(Exception):
    """Raised by programs on purpose, inside a block."""


def X(e):
    """An exception as an observation. OpInputError is jit()'s MXNetError (a subclass that names
    the op and the input shapes earlier); anything else must be exactly eager's type."""
    name = type(e).__name__
    if isinstance(e, minpy_jit.OpInputError):
        name = "MXNetError"
    return ("raised", name)


def R(x):
    """An observation of a value: an array's metadata and data, or the exception reading raises."""
    try:
        if isinstance(x, (list, tuple)):
            return [R(v) for v in x]
        if isinstance(x, nd.NDArray):
            meta = (type(x).__name__, tuple(x.shape), str(x.dtype), str(x.context), x.stype)
            return ("array",) + meta + (x.asnumpy().copy(),)
        if isinstance(x, (bool, int, float, str, type(None), np.generic, np.ndarray)):
            return ("py", x)
        return ("other", type(x).__name__)
    except Exception as e:  # noqa: BLE001 - the exception is what is observed
        return X(e)


def P(x):
    """Metadata only (no data read): what a lazy array must report before it runs."""
    try:
        return ("meta", tuple(x.shape), str(x.dtype), str(x.context), x.stype, x.size, x.ndim)
    except Exception as e:  # noqa: BLE001
        return X(e)


def G(x):
    """An array's gradient buffer, read."""
    try:
        return R(x.grad)
    except Exception as e:  # noqa: BLE001
        return X(e)


# ---------------------------------------------------------------- callbacks the programs use

class FuzzAffine(mx.operator.CustomOp):
    """y = 2x + 1, computed with nd ops inside MXNet's callback."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2 + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register("fuzz_affine")
class FuzzAffineProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return FuzzAffine()


def UPD(key, grad, weight):
    """A kvstore updater: ops run from MXNet's C callback."""
    weight[:] -= 0.125 * grad


# ---------------------------------------------------------------- running and comparing

def _observe_env(env):
    """Every array, list of arrays and Gluon block the program left in its locals, read."""
    out = []
    for name in sorted(env):
        v = env[name]
        if isinstance(v, nd.NDArray):
            out.append((name, R(v), G(v) if _has_grad(v) else None))
        elif isinstance(v, (list, tuple)) and v and all(isinstance(a, nd.NDArray) for a in v):
            out.append((name, R(v)))
        elif isinstance(v, gluon.Block):
            params = []
            for i, p in enumerate(v.collect_params().values()):
                try:
                    data = R(p.data())
                    grad = R(p.grad()) if p.grad_req != "null" else None
                except Exception as e:  # noqa: BLE001
                    data, grad = X(e), None
                params.append((i, data, grad))
            out.append((name, params))
    return out


def _has_grad(x):
    try:
        return x.grad is not None
    except Exception:  # noqa: BLE001
        return False


def run(program, seed, use_jit):
    """One run of the program; everything it observed, in order."""
    mx.random.seed(seed)
    np.random.seed(seed)
    obs = []
    J = minpy_jit.jit if use_jit else contextlib.nullcontext
    FLUSH = minpy_jit.flush if use_jit else (lambda: None)
    try:
        env = program(J, FLUSH, obs)
    except Exception as e:  # noqa: BLE001 - the prelude or the handler failed: still compared
        env = {}
        obs.append(("program raised",) + X(e))
    final = _observe_env(env)
    try:
        nd.waitall()
        final.append(("waitall", "ok"))
    except Exception as e:  # noqa: BLE001
        final.append(("waitall",) + X(e))
    del env
    return obs, final


def _diff(e, j, path, exact):
    """None, or where and how observation j (jit) differs from e (eager)."""
    if isinstance(e, np.ndarray) and isinstance(j, np.ndarray):
        if e.shape != j.shape or e.dtype != j.dtype:
            return "%s: array %s %s (eager) vs %s %s (jit)" % (path, e.shape, e.dtype, j.shape, j.dtype)
        if e.dtype.kind in "fc":
            same = np.array_equal(e, j, equal_nan=True)
            if same and exact and e.dtype.kind == "f":  # bit for bit: -0.0 is not 0.0
                same = not ((np.signbit(e) != np.signbit(j)) & ~np.isnan(e)).any()
            if not same and not exact:
                same = bool(np.all(np.isclose(j, e, rtol=RTOL.get(e.dtype, 1e-6), atol=ATOL.get(e.dtype, 1e-6),
                                              equal_nan=True) | ((e == j) & np.isinf(e))))
        else:
            same = np.array_equal(e, j)
        if not same:
            unequal = ~np.isclose(j, e, rtol=0, atol=0, equal_nan=True)
            if e.dtype.kind == "f" and not unequal.any():
                unequal = (np.signbit(e) != np.signbit(j)) & ~np.isnan(e)
            bad = np.argwhere(unequal) if e.ndim else [()]
            where = tuple(bad[0]) if len(bad) else ()
            ev = e[where] if e.ndim else e
            jv = j[where] if j.ndim else j
            return "%s: value at %s is %r (eager) vs %r (jit)%s" % (path, where, ev, jv,
                                                                   " [bit-exact required]" if exact else "")
        return None
    if isinstance(e, (list, tuple)) and isinstance(j, (list, tuple)):
        if len(e) != len(j):
            return "%s: %d items (eager) vs %d (jit): %.200r vs %.200r" % (path, len(e), len(j), e, j)
        for i, (a, b) in enumerate(zip(e, j)):
            d = _diff(a, b, "%s[%d]" % (path, i), exact)
            if d:
                return d
        return None
    if type(e) is not type(j) and not (isinstance(e, (int, float, np.generic)) and isinstance(j, (int, float, np.generic))):
        return "%s: %.200r (eager) vs %.200r (jit)" % (path, e, j)
    if isinstance(e, (float, np.floating)) and isinstance(j, (float, np.floating)):
        if (e == j and (not exact or np.signbit(e) == np.signbit(j))) or (e != e and j != j):
            return None
        if not exact and np.isclose(j, e, rtol=1e-6, atol=1e-6):
            return None
        return "%s: %r (eager) vs %r (jit)" % (path, e, j)
    if isinstance(e, np.generic) or isinstance(j, np.generic):
        same = np.array_equal(np.asarray(e), np.asarray(j), equal_nan=True) and np.asarray(e).dtype == np.asarray(j).dtype
        return None if same else "%s: %r (eager) vs %r (jit)" % (path, e, j)
    return None if e == j else "%s: %.200r (eager) vs %.200r (jit)" % (path, e, j)


def run_both(program, seed, config=None):
    """(eager, jitted) observations of one program; config: minpy_jit.config() for the jit run."""
    eager = run(program, seed, use_jit=False)
    saved = minpy_jit.config()
    minpy_jit.config(**dict(config or {}, recompile_limit=10 ** 9))  # one site compiles many programs
    try:
        jitted = run(program, seed, use_jit=True)
    finally:
        minpy_jit.config(**saved)
    return eager, jitted


def first_difference(eager, jitted, exact=False):
    """None if the two runs observed the same, else where and how they differ."""
    return _diff(eager[0], jitted[0], "OBS", exact) or _diff(eager[1], jitted[1], "final", exact)


def compare_runs(program, seed, exact=False, config=None):
    """Runs program eagerly and under jit(); None if everything observed agrees, else the first
    difference. exact=True requires bit-equal floats (for programs whose kernels are the same)."""
    return first_difference(*run_both(program, seed, config), exact=exact)


# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(11004645)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (3, 4,)), dtype='float32')
    a1.attach_grad(grad_req='add')
    a5 = nd.array(RNG.uniform(0.0, 0.5, (3, 4,)), dtype='float32')
    try:
        with J():
            a2 = (((nd.clip(nd.exp((nd.sigmoid(a1) * -1.5)), -3.0, 3.0) * a1) - 3.0) + 0.1)
            for it in range(5):
                a3 = ((((((a2 * 0.1) * -1.5) - a2) + 0.1) - 0.5) + -2.7)
                nd.rmsprop_update(a3, a2, a5, lr=abs(-0.75), out=a3)
                with autograd.record():
                    a6 = nd.relu(a1)
                    with autograd.pause():
                        l8 = nd.split(a2, num_outputs=3, axis=0)
                        a9 = l8[2]
                    a10 = nd.concat(a9, a5, a9, dim=0)
            a24 = nd.slice_axis(a6, axis=1, begin=0, end=2)
            a25 = -0.75 - a24
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 11004645, exact=True, config={'fuse': False, 'segment_ops': 16, 'async_launch': False, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
