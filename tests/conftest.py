"""Shared helpers for differential tests: run a function eagerly and under jit(), compare.

    eager, jitted = run_both(fn, x, y)          # fn gets fresh copies of x, y each time
    assert_same(eager, jitted)                  # values, shapes and dtypes (nested lists ok)
    res = run_both(fn, x, seed=3)               # mx.random.seed(3) before each run
    res.stats                                   # minpy_jit.stats() delta of the jitted run
"""
import contextlib
import faulthandler
import numbers
import os
import sys

import mxnet as mx
import numpy as np
import pytest

import minpy_jit
from minpy_jit import intercept

BIG = 10 ** 9  # recompile limit used while run_both's jit() scope runs

# tests/stress/: the fuzz, soak, threads, shapes and interrupt campaigns run on demand (see its
# README.md), never in the suite.
collect_ignore = ["stress"]

# A test that hangs (a deadlock with MXNet's engine threads, a child process that never ends)
# prints every thread's stack and ends the run after this long, instead of holding CI until its
# own time limit. The slowest test takes well under a minute on a loaded 2-core machine.
HANG_LIMIT_S = 600


def _uncaptured_stderr(config):
    """pytest's copy of the real stderr (fd capture hides fd 2 from faulthandler), else ours."""
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key
        return os.fdopen(os.dup(config.stash[fault_handler_stderr_fd_key]), "w")
    except Exception:  # another pytest version or -p no:faulthandler: stacks go to our stderr
        return sys.stderr


@pytest.fixture(autouse=True, scope="module")
def _collect_garbage_between_modules():
    """An array a failing op reached (a suspect, cpp/src/failures.h) defers our kernels' checks
    while it lives, and a test that catches the failure (`pytest.raises` keeps the traceback,
    whose frame holds the arrays) leaves it in a reference cycle: only Python's collector frees
    it, at a time the allocation count decides. Collected before each module, the tests that
    count our kernels do not depend on that timing (a full run once found all checks deferred
    from about a tenth of the suite on)."""
    import gc
    gc.collect()
    yield


@pytest.fixture(autouse=True)
def _hang_watchdog(request):
    out = _uncaptured_stderr(request.config)
    faulthandler.dump_traceback_later(HANG_LIMIT_S, exit=True, file=out)
    yield
    faulthandler.cancel_dump_traceback_later()
    if out is not sys.stderr:
        out.close()


def copy_args(args):
    """Fresh copies of the NDArrays in args (made eagerly); other values pass through."""
    out = []
    for a in args:
        if isinstance(a, mx.nd.NDArray):
            out.append(a.copy())
        elif isinstance(a, (list, tuple)):
            out.append(type(a)(copy_args(a)))
        else:
            out.append(a)
    return out


def stats_delta(before, after):
    """after - before for the numeric (and nested dict) entries of minpy_jit.stats()."""
    d = {}
    for k, v in after.items():
        b = before.get(k)
        if isinstance(v, dict):
            sub = {kk: vv - (b or {}).get(kk, 0) for kk, vv in v.items()
                   if isinstance(vv, numbers.Number) and vv != (b or {}).get(kk, 0)}
            d[k] = sub
        elif isinstance(v, numbers.Number):
            d[k] = v - (b or 0)
    return d


class Both(tuple):
    """(eager, jitted) results; .stats is the stats() delta of the jitted run."""
    stats = None

    @property
    def eager(self):
        return self[0]

    @property
    def jitted(self):
        return self[1]


def materialize(out):
    """Wait for every NDArray in out (so errors surface here, not in a later comparison)."""
    for _, v in _leaves(out):
        if isinstance(v, mx.nd.NDArray):
            v.wait_to_read()
    return out


def run_eager(fn, *args, seed=None):
    assert not intercept.hooks_active(), "eager reference run would be recorded"
    args = copy_args(args)
    if seed is not None:
        mx.random.seed(seed)
    out = fn(*args)
    mx.nd.waitall()
    return materialize(out)


def run_jit(fn, *args, seed=None):
    """fn under jit() on copies of args. Returns (result, stats delta)."""
    args = copy_args(args)
    mx.nd.waitall()
    if seed is not None:
        mx.random.seed(seed)
    old_limit = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=BIG)  # many distinct graphs come from this one site
    try:
        before = minpy_jit.stats()
        with minpy_jit.jit():
            out = fn(*args)
        after = minpy_jit.stats()
    finally:
        minpy_jit.config(recompile_limit=old_limit)
    assert not intercept.hooks_active()
    return materialize(out), stats_delta(before, after)


def run_both(fn, *args, seed=None):
    """Run fn eagerly, then under minpy_jit.jit(), each on fresh copies of args."""
    eager = run_eager(fn, *args, seed=seed)
    jitted, delta = run_jit(fn, *args, seed=seed)
    res = Both((eager, jitted))
    res.stats = delta
    return res


def _leaves(x, path="out"):
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            yield from _leaves(v, "%s[%d]" % (path, i))
    elif isinstance(x, dict):
        for k in sorted(x):
            yield from _leaves(x[k], "%s[%r]" % (path, k))
    else:
        yield path, x


def assert_same(eager, jitted):
    """Same structure; every NDArray has the same shape, dtype, context and values, bit for bit:
    equal floats with equal signs (-0.0 is not 0.0); NaNs compare equal to NaNs."""
    le, lj = list(_leaves(eager)), list(_leaves(jitted))
    assert [p for p, _ in le] == [p for p, _ in lj], "different result structure"
    for (path, e), (_, j) in zip(le, lj):
        if isinstance(e, mx.nd.NDArray):
            assert isinstance(j, mx.nd.NDArray), "%s: jitted result is %r" % (path, type(j))
            assert type(e) is type(j), "%s: %s vs %s" % (path, type(e), type(j))
            assert e.shape == j.shape, "%s: shape %s (eager) vs %s (jit)" % (path, e.shape, j.shape)
            assert e.dtype == j.dtype, "%s: dtype %s (eager) vs %s (jit)" % (path, e.dtype, j.dtype)
            assert e.context == j.context, "%s: context %s vs %s" % (path, e.context, j.context)
            e, j = e.asnumpy(), j.asnumpy()
        if isinstance(e, np.ndarray) or isinstance(j, np.ndarray):
            e, j = np.asarray(e), np.asarray(j)
            assert e.shape == j.shape and e.dtype == j.dtype, path
            np.testing.assert_array_equal(j, e, err_msg="%s (jit vs eager)" % path)
            if e.dtype.kind == "f":
                signs_differ = (np.signbit(e) != np.signbit(j)) & ~np.isnan(e)
                assert not signs_differ.any(), "%s: the sign of a zero differs (jit vs eager) at %s" % (
                    path, tuple(np.argwhere(signs_differ)[0]))
        else:
            assert e == j or (e != e and j != j), "%s: %r (eager) vs %r (jit)" % (path, e, j)


# ------------------------------------------------------------------ small shared helpers

def jit_or_eager(use_jit):
    """A jit() scope, or no scope at all: the same block run both ways."""
    return minpy_jit.jit() if use_jit else contextlib.nullcontext()


def train_steps(net, trainer, x, y, steps):
    """`steps` Gluon training steps (softmax cross-entropy, mean, backward(), trainer.step(1)):
    the losses and the parameters after them."""
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(steps):
        with mx.autograd.record():
            loss = loss_fn(net(x), y).mean()
        loss.backward()
        trainer.step(1)
        losses.append(loss)
    return losses, [p.data() for p in net.collect_params().values()]


def direct_launches():
    """Graphs run so far without CachedOp (kernel_launch.h): stats()['kernels_launched_directly']."""
    import minpy_jit
    return minpy_jit.stats()["kernels_launched_directly"]


def rand(*shape, seed=0, dtype=np.float32):
    """Deterministic uniform(-1, 1) numpy data."""
    return np.random.RandomState(seed).uniform(-1, 1, size=shape).astype(dtype)


def arr(a):
    """An eager NDArray holding a copy of numpy array a (same dtype); never called inside a scope."""
    from minpy_jit import intercept
    assert not intercept.hooks_active()
    return mx.nd.array(a, dtype=a.dtype)


@pytest.fixture
def mxnet_kernels():
    """For tests about something other than fusion that compare bit for bit (printed
    strings, exact sums) or count graph nodes: MXNet's own kernels everywhere."""
    previous = minpy_jit.config()["fuse"]
    minpy_jit.config(fuse=False)
    yield
    minpy_jit.config(fuse=previous)


@pytest.fixture
def whole_traces():
    """For tests about what one trace becomes (kernel counts of long chains): no segments."""
    previous = minpy_jit.config()["segment_ops"]
    minpy_jit.config(segment_ops=0)
    yield
    minpy_jit.config(segment_ops=previous)


def here():
    """Line number of the caller's current line."""
    import sys
    return sys._getframe(1).f_lineno


@pytest.fixture
def isolated_runtime():
    """Zeroed stats for the test; configuration restored and MXNet unpatched afterwards."""
    from minpy_jit import intercept
    saved = minpy_jit.config()
    minpy_jit.reset_stats()
    yield
    minpy_jit.config(**saved)  # config() round-trips: it returns exactly the options it accepts
    assert not intercept.hooks_active()


@pytest.fixture
def no_recompile_limit():
    """One test site compiles many graphs (one per program or scalar): no recompile limit."""
    previous = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=BIG)
    yield
    minpy_jit.config(recompile_limit=previous)


def run_threads(*targets):
    """Runs each target on its own thread; re-raises the first exception in the caller."""
    import threading
    errors = []

    def wrap(t):
        def run():
            try:
                t()
            except BaseException as e:  # noqa: B902 - reported in the main thread
                errors.append(e)
        return run
    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]


def mxnet_python_calls(fn):
    """Names of the functions in mxnet's own Python files that fn() called (the generated op
    functions' code is exec'd text, not a file of mxnet's: not seen)."""
    mxnet_dir = os.path.dirname(mx.__file__)
    seen = set()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(mxnet_dir):
            seen.add(frame.f_code.co_name)
    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


IN_PLACE = {"x += s": "__iadd__", "x -= s": "__isub__", "x *= s": "__imul__", "x /= s": "__itruediv__"}


def in_place(x, name, other):
    """x op= other for the in-place operator `name` (a key's value in IN_PLACE); the result."""
    if name == "__iadd__":
        x += other
    elif name == "__isub__":
        x -= other
    elif name == "__imul__":
        x *= other
    else:
        x /= other
    return x


def in_place_program(name, others):
    """A program applying x op= other (in-place operator `name`) for each of `others`, then for
    its arrays y and row, keeping a copy of x after each and checking x itself comes back."""
    def program(x, y, row):
        seen = []
        for other in list(others) + [y, row]:
            before = x
            x = in_place(x, name, other)
            assert x is before
            seen.append(x.copy())
        return seen
    return program


def assert_chain_skipped_only_inside_a_scope(use, chain):
    """use() calls the functions of MXNet's Python `chain` outside a scope, none of them inside."""
    with minpy_jit.jit():
        pass
    assert chain <= mxnet_python_calls(use)  # outside any scope: MXNet's own chain
    with minpy_jit.jit():
        inside = mxnet_python_calls(use)
    assert not (chain & inside), inside
