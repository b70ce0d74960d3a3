"""@minpy_jit.function: results equal the undecorated function's, call after call.

Every test runs the decorated function and the original (`f.original`, plain eager
MXNet) on copies of the same inputs, several times, and compares results and the
inputs afterwards (in-place writes). Where a test is about *how* a call ran
(replayed, recompiled, split), it asserts on the fragment counters.
"""
import contextlib
import io
import os
import sys
import threading
import traceback

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, nd

import minpy_jit
from minpy_jit import _core, intercept

from conftest import arr, assert_same, copy_args, rand, run_threads

THIS = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    _core.fragment_reset_stats()
    yield
    assert not intercept.hooks_active()


def fstats():
    return _core.fragment_stats()


def both(f, *args, calls=3, seed=None, compare_args=True):
    """Runs f (decorated) and f.original on fresh copies of args `calls` times; compares
    results and (in-place writes) the arguments afterwards. Returns the decorated results."""
    outs = []
    for _ in range(calls):
        a, b = copy_args(args), copy_args(args)
        if seed is not None:
            mx.random.seed(seed)
        got = f(*a)
        if seed is not None:
            mx.random.seed(seed)
        want = f.original(*b)
        mx.nd.waitall()
        assert_same(want, got)
        if compare_args:
            assert_same(list(b), list(a))
        outs.append(got)
    return outs


# ------------------------------------------------------------------ basics

def test_issue_example_replays_after_the_first_call():
    scale = 0.5

    @minpy_jit.function
    def step(x, w, b):
        h = nd.relu(nd.dot(x, w) + b)
        for _ in range(3):
            h = h * scale + 0.5
        if h.shape[0] > 16:
            h = nd.tanh(h)
        return h

    x, w, b = arr(rand(8, 5, seed=1)), arr(rand(5, 4, seed=2)), arr(rand(4, seed=3))
    both(step, x, w, b, calls=4)
    st = fstats()
    assert st["captures"] == 1 and st["misses"] == 1, st
    # the branch on the shape is Python: a taller x takes it, as plain Python does
    both(step, arr(rand(20, 5, seed=4)), w, b)
    assert len(step.plan.fragments) == 2 and [b.kind for b in step.plan.boundaries] == ["if"]


def test_one_fragment_outside_a_scope_is_one_graph_launch():
    @minpy_jit.function
    def chain(x):
        for _ in range(20):
            x = nd.relu(x * 1.01 + 0.5)
        return x

    x = arr(rand(32, 32))
    both(chain, x, calls=5)
    st = fstats()
    assert st["replayed"] == 4 and st["appended"] == 0 and st["captures"] == 1, st
    assert chain.plan.single_fragment


def test_inside_a_jit_scope_fragments_join_the_trace_as_one_graph():
    @minpy_jit.function
    def cell(h, x):
        return nd.tanh(h * 0.5 + x)

    x, h0 = arr(rand(4, 4, seed=1)), arr(rand(4, 4, seed=2))
    cell(h0, x)  # capture
    minpy_jit.reset_stats()
    with minpy_jit.jit():
        h = h0
        for _ in range(10):
            h = cell(h, x)
    want = h0
    for _ in range(10):
        want = cell.original(want, x)
    assert_same(want, h)
    st, fs = minpy_jit.stats(), fstats()
    assert fs["appended"] == 10 and st["executions"] == 1 and st["ops_recorded"] == 0, (st, fs)


def test_results_keep_python_structure_and_identity():
    @minpy_jit.function
    def f(x, pair, n):
        a = x * 2
        b = [a, x, n]
        c = (a + 1, {"k": pair[0] * n})
        return a, b, c, pair, x

    x, pair = arr(rand(3)), [arr(rand(2, seed=5)), 7]
    for _ in range(3):
        out = f(x, pair, 3)
        ref = f.original(x, pair, 3)
        assert_same(ref, out)
        assert out[3] is pair and out[4] is x and out[1][1] is x and out[1][0] is out[0]


# ------------------------------------------------------------------ guards: never stale

def test_shape_dtype_and_value_changes_recompile():
    @minpy_jit.function
    def f(x, k):
        return nd.relu(x - k) * k

    both(f, arr(rand(3, 4)), 0.5)
    both(f, arr(rand(5, 4)), 0.5)
    both(f, arr(rand(5, 4).astype(np.float64)), 0.5)
    both(f, arr(rand(5, 4)), 0.25)
    both(f, arr(rand(5, 4)), 1)  # int, not float: another attribute string
    assert len(f.fragments[0].info()["variants"]) == 5


def test_rebinding_a_global_is_seen(capsys):
    global GSCALE
    GSCALE = 0.5

    @minpy_jit.function
    def f(x):
        return x * GSCALE

    x = arr(rand(3))
    minpy_jit.config(log="recompiles")
    try:
        both(f, x, calls=2)
        GSCALE = 0.25
        both(f, x, calls=2)
    finally:
        minpy_jit.config(log="")
    err = capsys.readouterr().err
    line = f.original.__code__.co_firstlineno + 2
    assert "guard failed: global `GSCALE` 0.5 -> 0.25, %s:%d" % (THIS, line) in err, err


def test_rebinding_a_closure_variable_is_seen():
    def make():
        k = 2.0

        @minpy_jit.function
        def f(x):
            return x * k

        def set_k(v):
            nonlocal k
            k = v
        return f, set_k

    f, set_k = make()
    x = arr(rand(3))
    for v in (2.0, 3.0, 3.0, -1.0):
        set_k(v)
        assert_same(x.asnumpy() * v, f(x).asnumpy())


def test_a_module_attribute_replaced_is_seen(monkeypatch):
    @minpy_jit.function
    def f(x):
        return nd.relu(x)

    x = arr(rand(4))
    both(f, x)
    monkeypatch.setattr(nd, "relu", nd.sigmoid)
    both(f, x)
    assert_same(nd.sigmoid(x), f(x))


def test_attributes_of_self_are_read_on_every_call():
    class Model:
        def __init__(self):
            self.w = arr(rand(4, 3, seed=1))
            self.scale = 2.0

        @minpy_jit.function
        def forward(self, x):
            return nd.dot(x, self.w) * self.scale

    m, x = Model(), arr(rand(2, 4))
    for _ in range(2):
        assert_same(nd.dot(x, m.w) * 2.0, m.forward(x))
    m.w = arr(rand(4, 3, seed=9))  # another array: read again, not frozen
    assert_same(nd.dot(x, m.w) * 2.0, m.forward(x))
    m.scale = 3.0
    assert_same(nd.dot(x, m.w) * 3.0, m.forward(x))
    m2 = Model()  # another instance of the same class: its own attributes
    m2.w = arr(rand(4, 3, seed=11))
    assert_same(nd.dot(x, m2.w) * 2.0, m2.forward(x))


def test_autograd_state_is_a_guard():
    @minpy_jit.function
    def f(x):
        return nd.relu(x) * 2

    x = arr(rand(5))
    x.attach_grad()
    f(x)
    with autograd.record():
        y = f(x)
    y.backward()
    assert_same(arr(np.where(x.asnumpy() > 0, 2.0, 0.0).astype(np.float32)), x.grad)



@pytest.mark.parametrize("reqs", [("write", "add"), ("add", "write")])
def test_grad_req_of_an_argument_is_a_guard(reqs):
    """A fragment recorded under autograd.record() and launched directly: whether an argument is
    a grad_req='add' variable decides the compiled graph (a fused unit's gradient reaches an
    'add' variable through _copy, which adds; our kernel's backward only writes). Called with a
    'write' variable, then an 'add' one (and the other way round), each variant must be its
    own: without the guard the second call reused the first graph, and the 'add' gradient was
    overwritten (x.grad 5.38 where eager adds up to 11.27). Bit for bit against eager."""
    @minpy_jit.function
    def f(x, w):
        y = nd.tanh(x * 2.0) * 3.0  # x's only reader: a fused unit
        z = nd.clip(w, -1.0, 1.0) * 2.0 + 1.0  # w's only reader: a clip
        return y, z

    def run(fn, req):
        x, w = arr(rand(5, 4, seed=1)), arr(rand(5, 4, seed=2))
        for v in (x, w):
            v.attach_grad(grad_req=req)
            v.grad[:] = 0.5
        outs = []
        for _ in range(2):
            with autograd.record():
                y, z = fn(x, w)
            autograd.backward([y, z])
            outs += [y, z]
        return outs + [x.grad, w.grad]

    for req in reqs + reqs:
        got, want = run(f, req), run(f.original, req)
        for g, e in zip(got, want):
            assert g.dtype == e.dtype and np.array_equal(g.asnumpy(), e.asnumpy()), req
    assert fstats()["replayed"] >= 4  # the variants are replayed (launched directly), not captured each call
    assert fstats()["captures"] == 2


# ------------------------------------------------------------------ in-place writes, aliasing

def test_in_place_writes_on_arguments():
    @minpy_jit.function
    def f(x, y):
        x += y
        x[:] = x * 2
        nd.relu(x - 1, out=y)
        y *= 3
        return x

    x, y = arr(rand(3, 4, seed=1)), arr(rand(3, 4, seed=2))
    outs = both(f, x, y)
    a, b = x.copy(), y.copy()
    assert f(a, b) is a


def test_in_place_writes_on_a_global_array():
    global GACC
    GACC = nd.zeros((2, 3))

    @minpy_jit.function
    def bump(v):
        GACC[:] = GACC + v
        return GACC.sum()

    want = np.zeros((2, 3), np.float32)
    for i in range(4):
        s = bump(float(i))
        want += i
        assert_same(want, GACC.asnumpy())
        assert float(s.asnumpy()) == want.sum()


def test_same_array_twice_is_its_own_case():
    @minpy_jit.function
    def f(a, b):
        a += 1
        return a + b

    x, y = arr(rand(3, seed=1)), arr(rand(3, seed=2))
    both(f, x, y)
    # now the same array as both arguments: the write is seen by the read, as in Python
    for _ in range(2):
        z = x.copy()
        w = x.copy()
        got, want = f(z, z), f.original(w, w)
        assert_same(want, got)
        assert_same(w, z)
    both(f, x, y)


# ------------------------------------------------------------------ exceptions

def test_an_error_mid_function_raises_at_the_same_line():
    @minpy_jit.function
    def f(x, w):
        y = x * 2
        z = nd.dot(y, w)
        return z + 1

    bad_line = f.original.__code__.co_firstlineno + 3
    for _ in range(2):
        with pytest.raises(mx.base.MXNetError) as info:
            f(arr(rand(2, 3)), arr(rand(4, 5)))
        frames = [t for t in traceback.extract_tb(info.tb) if t.filename == __file__]
        assert frames[-1].lineno == bad_line and frames[-1].name == "f", frames
    both(f, arr(rand(2, 3)), arr(rand(3, 5)))


def test_writes_before_an_error_happened_as_in_python():
    @minpy_jit.function
    def f(x, w):
        x += 1
        return nd.dot(x, w)

    x, x2 = arr(rand(2, 3)), arr(rand(2, 3))
    for _ in range(2):
        with pytest.raises(mx.base.MXNetError):
            f(x, arr(rand(4, 4)))
        with pytest.raises(mx.base.MXNetError):
            f.original(x2, arr(rand(4, 4)))
        assert_same(x2, x)


def test_python_errors_keep_their_type():
    @minpy_jit.function
    def f(x, d):
        return x * d["scale"]

    with pytest.raises(KeyError):
        f(arr(rand(2)), {})
    both(f, arr(rand(2)), {"scale": 3.0})


# ------------------------------------------------------------------ autograd, random

def test_gradients_through_a_fragment_equal_eager():
    @minpy_jit.function
    def loss(x, w):
        return (nd.dot(x, w) ** 2).sum()

    x = arr(rand(4, 3))
    for _ in range(3):
        grads = []
        for fn in (loss, loss.original):
            w = arr(rand(3, 2, seed=3))
            w.attach_grad()
            with autograd.record():
                out = fn(x, w)
            out.backward()
            grads.append((out, w.grad))
        assert_same(grads[1], grads[0])


def test_backward_inside_the_function():
    @minpy_jit.function
    def train_step(x, w, lr):
        with autograd.record():
            loss = (nd.dot(x, w) ** 2).mean()
        loss.backward()
        w[:] = w - lr * w.grad
        return loss

    x = arr(rand(8, 3))
    w1, w2 = arr(rand(3, 2, seed=5)), arr(rand(3, 2, seed=5))
    w1.attach_grad()
    w2.attach_grad()
    for _ in range(4):
        l1, l2 = train_step(x, w1, 0.1), train_step.original(x, w2, 0.1)
        assert_same(l2, l1)
        assert_same(w2, w1)


def test_random_ops_draw_as_eager():
    @minpy_jit.function
    def noisy(x):
        y = x + nd.random.uniform(shape=x.shape)
        return y * nd.random.normal(shape=x.shape)

    both(noisy, arr(rand(3, 4)), seed=11, calls=4)


# ------------------------------------------------------------------ control flow

def test_loops_and_branches_on_python_values():
    @minpy_jit.function
    def f(x, n, mode):
        for i in range(n):
            x = x * 0.9 + i
        if mode == "a":
            x = nd.relu(x)
        else:
            x = nd.sigmoid(x)
        total = 0
        while total < 3:
            x = x + total
            total += 1
        return x

    x = arr(rand(4, 4))
    for n, mode in [(3, "a"), (3, "b"), (0, "a"), (5, "b"), (3, "a")]:
        both(f, x, n, mode, calls=2)


def test_loop_variable_of_an_empty_loop_stays_unbound():
    @minpy_jit.function
    def f(x, n):
        for i in range(n):
            x = x + 1
        try:
            return x, i
        except NameError:
            return x, None

    both(f, arr(rand(3)), 2)
    both(f, arr(rand(3)), 0)


def scale_by_a_global(x):
    x += 1
    x *= MISSING_SCALE  # a global the module defines only later (or never)
    return x * 2


@pytest.mark.parametrize("defined_first", [False, True])
def test_a_global_missing_at_a_call_raises_at_its_line_after_the_statements_before_it(defined_first):
    """A fragment's inputs are evaluated at its call: a global missing there must not raise
    before the statements ahead of its read ran (x += 1 did, eagerly), nor at another line."""
    g = minpy_jit.function(scale_by_a_global)
    module = sys.modules[__name__]
    try:
        for defined in ([True, False, True] if defined_first else [False, True, False]):
            if defined:
                module.MISSING_SCALE = 3.0
            elif hasattr(module, "MISSING_SCALE"):
                del module.MISSING_SCALE
            x = arr(rand(3))
            want_x, got_x = x.copy(), x.copy()
            errors = []
            for fn, a in ((scale_by_a_global, want_x), (g, got_x)):
                try:
                    errors.append((None, fn(a)))
                except NameError as e:
                    errors.append(((str(e), traceback.extract_tb(e.__traceback__)[-1].lineno), None))
            assert errors[0][0] == errors[1][0]
            assert (errors[0][0] is None) == defined
            if defined:
                assert_same(errors[0][1], errors[1][1])
            assert_same(want_x, got_x)  # x += 1 ran, and nothing after it
    finally:
        if hasattr(module, "MISSING_SCALE"):
            del module.MISSING_SCALE


def test_a_closure_variable_not_set_at_a_call_raises_at_its_line_after_the_statements_before_it():
    def run(decorate):
        def f(x):
            x += 1
            return x * scale  # a cell filled only after the first call

        g = minpy_jit.function(f) if decorate else f
        x = arr(rand(3))
        try:
            g(x)
            first = None
        except NameError as e:
            first = (str(e), traceback.extract_tb(e.__traceback__)[-1].lineno)
        scale = 2.0
        return first, x, g(x), x

    want, got = run(False), run(True)
    assert want[0] is not None and want[0] == got[0]
    assert_same(want[1:], got[1:])


# ------------------------------------------------------------------ dual mode

@pytest.mark.parametrize("value", ["0", " Off ", "false", "NO"])
def test_minpy_jit_0_runs_the_plain_function(monkeypatch, value):
    """Every spelling jit() takes as off (the same C check, read at each call); back on, the
    function is compiled again."""
    @minpy_jit.function
    def f(x):
        return x * 3

    monkeypatch.setenv("MINPY_JIT", value)
    both(f, arr(rand(3)))
    assert fstats()["calls"] == 0 and not intercept.hooks_active()
    monkeypatch.setenv("MINPY_JIT", "1")
    both(f, arr(rand(3)))
    assert fstats()["calls"] == 3  # both() calls it three times


def test_unsupported_functions_run_under_jit_with_the_reason():
    @minpy_jit.function
    def gen(x):
        yield x * 2

    @minpy_jit.function
    def uses_locals(x):
        y = x + 1
        return locals()["y"]

    ns = {"nd": nd}
    exec("def no_source(x):\n    return nd.relu(x)\n", ns)  # noqa: S102
    nos = minpy_jit.function(ns["no_source"])
    x = arr(rand(3))
    assert_same(list(gen.original(x)), list(gen(x)))
    assert_same(uses_locals.original(x), uses_locals(x))
    assert_same(nd.relu(x), nos(x))
    assert "generator" in gen.fallback_reason
    assert "locals" in uses_locals.fallback_reason
    assert "source" in nos.fallback_reason
    assert "runs under jit() recording" in str(nos.explain(x))


# ------------------------------------------------------------------ threads

def test_each_decorated_function_counts_its_own_recompiles(capsys):
    """A function with boundaries runs in a jit() scope of its own, whose compiles count against
    recompile_limit. Closures made by one factory share a name and a line (and so would two
    files of one name): each decorated function is still a site of its own, with its own
    counter, and its log lines say which one."""
    def make(k):
        @minpy_jit.function
        def f(x):
            y = x * k
            print("", end="")   # boundary: the function runs in its own scope
            return y + x.sum()
        return f

    first, second = make(2.0), make(3.0)
    assert first.site != second.site and second.site.startswith(first.site.split(" (")[0])
    minpy_jit.config(recompile_limit=4, log="recompiles")
    try:
        for f in (first, second):
            for rows in (1, 2, 3, 4, 1, 2):  # four graphs at the scope's flush #0, each function
                both(f, arr(rand(rows, 3, seed=rows)), calls=1)
    finally:
        minpy_jit.config(log="")
    sites = minpy_jit.stats()["sites"]
    for f in (first, second):
        assert sites[f.site] == {"compiles": 4, "eager": False}, sites
    err = capsys.readouterr().err
    assert "WARNING" not in err, err
    assert second.site in err


def test_functions_of_one_name_and_line_in_two_files_are_two_sites(tmp_path):
    import importlib.util
    sites = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        path = tmp_path / d / "same_name.py"
        path.write_text("import minpy_jit\n@minpy_jit.function\ndef f(x):\n    return x * 2\n")
        spec = importlib.util.spec_from_file_location("same_name_%s" % d, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sites.append(mod.f.site)
        both(mod.f, arr(rand(3)), calls=2)
    assert sites[0] != sites[1] and "same_name.py:2" in sites[0], sites


def test_threads_calling_one_function():
    @minpy_jit.function
    def f(x, k):
        return nd.tanh(x * k) + k

    xs = [arr(rand(16, 16, seed=s)) for s in range(4)]
    want = [f.original(x, float(i)).asnumpy() for i, x in enumerate(xs)]

    def worker(i):
        def run():
            for _ in range(20):
                got = f(xs[i], float(i))
                np.testing.assert_allclose(got.asnumpy(), want[i], rtol=1e-6)
        return run

    run_threads(*[worker(i) for i in range(4)])


# ------------------------------------------------------------------ ahead of time, explain

def test_ahead_of_time_from_type_hints():
    global AOT_STATE
    AOT_STATE = nd.zeros((3,))

    @minpy_jit.function
    def f(x: minpy_jit.Tensor[(6, 3), "float32"], w: minpy_jit.Tensor[(3, 3)], k=2.0):
        AOT_STATE[:] = AOT_STATE + 1  # compiled on placeholders: must not run at decoration
        return nd.relu(nd.dot(x, w)) * k

    assert f.ahead_of_time == [0]
    info = f.fragments[0].info()
    assert len(info["variants"]) == 1 and info["variants"][0]["graph_nodes"] > 0  # built before any data
    assert_same(nd.zeros((3,)), AOT_STATE)
    x, w = arr(rand(6, 3)), arr(rand(3, 3, seed=2))
    got = f(x, w)
    assert_same(nd.relu(nd.dot(x, w)) * 2.0, got)
    assert_same(nd.ones((3,)), AOT_STATE)
    st = fstats()
    assert st["replayed"] == 1 and st["misses"] == 0, st
    with pytest.raises(ValueError, match=r"argument `x` has shape \(5, 3\), expected \(6, 3\)"):
        f(arr(rand(5, 3)), w)
    with pytest.raises(ValueError, match=r"argument `w` has dtype float64, expected float32"):
        f(x, arr(rand(3, 3).astype(np.float64)))
    with pytest.raises(TypeError, match=r"argument `x` is a list"):
        f([1, 2], w)


def test_explain_lists_fragments_boundaries_guards_and_graphs():
    @minpy_jit.function
    def f(x, n):
        y = nd.relu(x) * 2
        if n > 1:
            y = y + n
        print_it = y.sum()
        return y

    x = arr(rand(4))
    e = f.explain(x, 3)
    assert_same(f.original(x, 3), e.result)
    text = str(e)
    assert "3 fragments, 1 boundary" in text, text
    assert "boundary    lines" in text and "if: control flow stays Python" in text, text
    assert "argument `x`" in text and "shape (4,), float32, cpu(0)" in text, text
    assert "relu" in text and "graph " in text, text
    assert e is not None and str(minpy_jit.explain(f, x, 3)).startswith("@function")
    src = e.fragments[0].to_python()
    assert "relu" in src and src.startswith("def fragment_0_variant0(")
    assert "def f(x, n):" in e.source and "__mj_f0(" in e.source


def test_last_fragment_of_a_scoped_function_launches_directly_and_matches():
    """A function with boundaries runs in a scope of its own; its fragment that ends the function
    (or is followed by a statement that flushes) launches its graph directly when nothing is
    recorded yet, and one followed by more recorded Python is appended to the trace."""
    @minpy_jit.function
    def f(x, w):
        if x.shape[0] > 10:            # boundary decided on a shape, not taken: nothing recorded
            x = x * 3
        h = nd.relu(nd.dot(x, w) + 1)  # flush follows: the function returns
        return h * 2

    @minpy_jit.function
    def g(x, w):
        h = nd.dot(x, w) * 0.5         # appended: more recorded Python follows
        print("", end="")              # boundary that does not flush
        h = h + x.sum()                # recorded by the function's own scope
        return h

    x, w = arr(rand(4, 3, seed=1)), arr(rand(3, 3, seed=2))
    both(f, x, w, calls=4)
    f_info = _core.fragment_info(f.fragments[-1].handle)
    assert f_info["direct"] == 3 and f_info["appended"] == 0, f_info
    both(g, x, w, calls=4)
    g_info = _core.fragment_info(g.fragments[0].handle)
    assert g_info["appended"] == 3 and g_info["direct"] == 0, g_info


def test_direct_launch_in_own_scope_under_autograd_gives_eager_gradients():
    @minpy_jit.function
    def loss_of(x, w):
        if x.shape[1] == 7:            # not taken: the return fragment launches directly
            w = w * 1.0
        return (nd.tanh(nd.dot(x, w)) ** 2).sum()

    x = arr(rand(4, 3, seed=3))
    grads = []
    for fn in (loss_of, loss_of.original, loss_of, loss_of):
        w = arr(rand(3, 2, seed=4))
        w.attach_grad()
        with autograd.record():
            out = fn(x, w)
        out.backward()
        grads.append((out.asnumpy(), w.grad.asnumpy()))
    for got in grads[2:] + grads[:1]:
        assert_same(grads[1][0], got[0])
        assert_same(grads[1][1], got[1])
    assert _core.fragment_info(loss_of.fragments[-1].handle)["direct"] >= 1


def _param_inputs(f):
    return _core.fragment_info(f.fragments[0].handle)["variants"][0]["param_inputs"]


def test_inputs_that_stay_the_same_arrays_run_as_graph_parameters_and_stay_right():
    """A direct launch declares the inputs that were the same arrays in its first two launches
    as CachedOp parameters (as Gluon does for a hybridized block's weights). Their values may
    change in place between calls, or the arrays be replaced: results stay the undecorated
    function's."""
    W = {"w": arr(rand(5, 4, seed=1)), "b": arr(rand(4, seed=2))}

    @minpy_jit.function
    def layer(x):
        h = nd.FullyConnected(x, W["w"].T, W["b"], num_hidden=4)
        for _ in range(3):
            h = nd.tanh(h) * 0.5 + x.sum()
        return h

    def check(x):
        got = layer(x)
        want = layer.original(x)
        assert_same(want, got)

    base = arr(rand(3, 5, seed=10))
    for k in range(4):
        check(base * (k + 1))                 # x is a new temporary every call: a data input,
    assert _param_inputs(layer) == 2          # even when its handle's address is reused; w, b: parameters
    W["w"] += 1                               # changed in place
    check(arr(rand(3, 5, seed=20)))
    W["w"][:] = arr(rand(5, 4, seed=3))
    check(arr(rand(3, 5, seed=21)))
    for k in range(6):                        # replaced by other arrays, call after call
        W["b"] = arr(rand(4, seed=30 + k))
        check(arr(rand(3, 5, seed=40 + k)))
    assert _param_inputs(layer) == 0          # given up after changing arrays: plain inputs again
    check(arr(rand(3, 5, seed=50)))


def test_an_input_written_in_place_is_never_a_graph_parameter():
    @minpy_jit.function
    def acc(total, x):
        total += x * 2
        return total

    total, x = arr(rand(4, seed=1)), arr(rand(4, seed=2))
    want_total = total.copy()
    for _ in range(4):
        got = acc(total, x)
        want = acc.original(want_total, x)
        assert_same(want, got)
        assert_same(want_total, total)
    info = _core.fragment_info(acc.fragments[0].handle)["variants"][0]
    assert info["writes_inputs"] == 1
    # x is stable and may be a parameter; total (written) never is
    assert info["param_inputs"] <= 1


def test_context_is_a_guard():
    """An array on another context (cpu(1) on this CPU build) is a new case, with the reason."""
    @minpy_jit.function
    def f(x):
        return nd.relu(x * 2 - 1) + nd.ones(x.shape, ctx=x.context)

    for ctx in (mx.cpu(0), mx.cpu(0), mx.cpu(1), mx.cpu(1), mx.cpu(0)):
        x = nd.array(rand(4), ctx=ctx)
        got, want = f(x), f.original(x)
        assert got.context == want.context == ctx
        assert_same(want, got)
    info = _core.fragment_info(f.fragments[0].handle)
    assert info["misses"] == 2 and len(info["variants"]) == 2, info
    assert "context cpu(0) -> cpu(1)" in info["last_miss"], info["last_miss"]


def test_explain_lists_the_grad_req_guard_of_a_recorded_fragment():
    """A fragment recorded under autograd.record() guards whether each array it reads is a
    grad_req='add' variable (its compiled backward adds instead of writing): explain shows it,
    and a flip from 'write' to 'add' is a new variant whose gradient equals eager's."""
    @minpy_jit.function
    def f(w):
        return (nd.tanh(w) * 3).sum()

    def grads(call, req):
        w = arr(np.linspace(-1, 1, 6, dtype=np.float32))
        w.attach_grad(grad_req=req)
        w.grad[:] = 1
        with autograd.record():
            y = call(w)
        y.backward()
        return w.grad.asnumpy()

    assert_same(grads(f.original, "write"), grads(f, "write"))
    text = str(f.explain(arr(np.zeros(6, np.float32))))
    assert "grad_req not 'add'" in text, text
    assert_same(grads(f.original, "add"), grads(f, "add"))
    w = arr(np.zeros(6, np.float32))
    w.attach_grad(grad_req="add")
    with autograd.record():
        text = str(f.explain(w))
    # the 'write' and the 'add' variant recorded, beside the one captured outside record()
    assert "grad_req 'add'" in text and "grad_req not 'add'" in text and "3 variants" in text, text
