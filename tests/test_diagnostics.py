"""Diagnostics and the scalar policy, always checked against the same code run eagerly.

Covers: scalar lifting (a changing Python scalar or optimizer lr costs at most one recompile),
the per-site recompile limit, recompile/flush logging (config(log=...) and MINPY_JIT_LOG in a
fresh process), miss reasons, flush events with their user source lines, eager fallbacks,
explain(), debug_print(), the graph printout, its symbol JSON, to_python/compile_python, and
MINPY_JIT=0 set before import.

No expected value is hard-coded: values come from eager MXNet runs of the same code, counts from
stats() / events() deltas, line numbers from the test's own source.
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import mxnet as mx
import numpy as np
import pytest
from mxnet import nd

import minpy_jit
from minpy_jit import intercept

from conftest import arr, assert_same, here, rand, run_eager

THIS = os.path.basename(__file__)


# ------------------------------------------------------------------ helpers


def at(line):
    return "%s:%d" % (THIS, line)


def compile_lines(err):
    return [ln for ln in err.splitlines() if ln.startswith("minpy_jit: compile ")]


def flush_lines(err):
    return [ln for ln in err.splitlines() if ln.startswith("minpy_jit: flush ")]


def delta(before, after, key):
    return after[key] - before[key]


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    """Zeroed stats per test; config (including the log switches) restored afterwards."""
    yield
    assert not intercept.hooks_active()


# ------------------------------------------------------------------ scalar policy

def test_changing_scalars_compile_at_most_twice():
    """`x * s + t` with s, t new every iteration: the first value is baked in, the second makes the
    positions hot (lifted to (1, 1) inputs), every later iteration is a cache hit."""
    x = arr(rand(6, 7, seed=1))
    before = minpy_jit.stats()
    for i in range(100):
        with minpy_jit.jit():
            y = x * (0.1 + i * 0.01) + 0.5 * i
        assert_same(run_eager(lambda x: x * (0.1 + i * 0.01) + 0.5 * i, x), y)
    after = minpy_jit.stats()
    assert delta(before, after, "cache_misses") <= 2, after
    assert delta(before, after, "cache_hits") + delta(before, after, "cache_misses") == 100
    assert after["eager_replays"] == before["eager_replays"]
    ir = minpy_jit.last_graph()
    assert "broadcast_mul" in ir and "broadcast_add" in ir and "_mul_scalar" not in ir, ir
    inputs = [s for s in minpy_jit.graphs()[0]["steps"] if s["input"]]
    assert [tuple(s["shape"]) for s in inputs] == [x.shape, (1, 1), (1, 1)], inputs


def test_changing_scalars_mixed_ops_and_dtypes():
    """Several scalar ops (both operand orders, comparisons) on float64 and int32 arrays: lifting
    keeps the dtype semantics of the attribute form (e.g. int32 truncation of the scalar)."""
    def fn(x, s):
        return (s - x) * s, x / s, s / (x * x + 1), nd.maximum(x, s) ** 2, x > s

    for dtype in (np.float64, np.int32):
        x = arr((rand(5, 4, seed=2) * 9).astype(dtype) + 1)
        before = minpy_jit.stats()
        for i in range(12):
            s = 1.5 + 0.75 * i
            with minpy_jit.jit():
                got = fn(x, s)
            assert_same(run_eager(fn, x, s), got)
        after = minpy_jit.stats()
        assert delta(before, after, "cache_misses") <= 2, (dtype, after)


def test_constant_scalar_stays_attribute_across_flushes_in_one_scope():
    """A scope cut into several traces by flushes: a scalar that never changes (`* 3`) must stay an
    attribute, so running the same code again is all cache hits. (Hot positions are keyed by op index
    in the trace; the op at the same index of a *different* trace of the scope, with another constant,
    `* 2`, must not make it hot.)"""
    def fn(x):
        y = nd.tanh(x) * 3          # trace 1: tanh, _mul_scalar 3, sum
        s = y.sum().asscalar()
        z = nd.exp(y) * 2           # trace 2: exp, _mul_scalar 2
        return z + s

    x = arr(rand(5, 73, seed=3))
    misses = []
    for _ in range(3):
        before = minpy_jit.stats()["cache_misses"]
        with minpy_jit.jit():
            got = fn(x)
        misses.append(minpy_jit.stats()["cache_misses"] - before)
        assert_same(run_eager(fn, x), got)
    assert misses[1:] == [0, 0], (misses, minpy_jit.events()[-2:])


def _mk_state(seed):
    """(w, g, m, v, w2, g2, m2): weights, gradients and states of two parameters."""
    return [arr(rand(4, 3, seed=seed)), arr(rand(4, 3, seed=seed + 1)), arr(np.zeros((4, 3), np.float32)),
            arr(np.zeros((4, 3), np.float32)), arr(rand(5, seed=seed + 2)), arr(rand(5, seed=seed + 3)),
            arr(np.zeros((5,), np.float32))]


UPDATES = {
    "sgd_update": lambda st, lr: nd.sgd_update(st[0], st[1], lr=lr, wd=1e-3, rescale_grad=0.5, out=st[0]),
    "sgd_update clip": lambda st, lr: nd.sgd_update(st[0], st[1], lr=lr, wd=1e-3, clip_gradient=0.3, out=st[0]),
    "sgd_mom_update": lambda st, lr: nd.sgd_mom_update(st[0], st[1], st[2], lr=lr, momentum=0.9, wd=1e-3,
                                                       out=st[0]),
    "adam_update": lambda st, lr: nd.adam_update(st[0], st[1], st[2], st[3], lr=lr, wd=1e-3, beta1=0.9,
                                                 beta2=0.99, out=st[0]),
    "multi_sgd_update": lambda st, lr: nd.multi_sgd_update(st[0], st[1], st[4], st[5], lrs=(lr, lr * 0.5),
                                                           wds=(1e-3, 0.0), num_weights=2, out=[st[0], st[4]]),
    "multi_sgd_mom_update": lambda st, lr: nd.multi_sgd_mom_update(
        st[0], st[1], st[2], st[4], st[5], st[6], lrs=(lr, lr * 0.5), wds=(1e-3, 0.0), momentum=0.9,
        num_weights=2, out=[st[0], st[4]]),
}


@pytest.mark.parametrize("fuse", [True, False], ids=["kernel", "mxnet-kernels"])
@pytest.mark.parametrize("name", sorted(UPDATES))
def test_optimizer_update_with_changing_lr_compiles_at_most_twice(name, fuse):
    """An optimizer update whose lr changes every step (a schedule): at most two graphs, then hits;
    weights and states match eager after every step. With our kernels the update is our
    multi-tensor kernel with the lr as an input array, bit-identical to eager; with fuse=False
    it is lowered to MXNet's elementwise ops with the lr an input (equal to float rounding)."""
    update = UPDATES[name]
    previous, previous_direct = minpy_jit.config()["fuse"], minpy_jit.config()["direct_updates"]
    # the parametrized cases share the jit() site below; each step's update runs as a graph (not
    # launched directly, flush.cc), whose form this test reads
    minpy_jit.config(recompile_limit=10 ** 6, fuse=fuse, direct_updates=False)
    try:
        sj, se = _mk_state(10), _mk_state(10)
        before = minpy_jit.stats()
        for step in range(40):
            lr = 0.1 / (1 + step)
            with minpy_jit.jit():
                update(sj, lr)
            update(se, lr)
            nd.waitall()
            assert_same(se, sj)
        after = minpy_jit.stats()
        ir = minpy_jit.last_graph()
    finally:
        minpy_jit.config(fuse=previous, direct_updates=previous_direct)
    assert delta(before, after, "cache_misses") <= 2, after
    assert delta(before, after, "cache_hits") >= 38, after
    assert after["eager_replays"] == before["eager_replays"] and after["fallbacks"] == before["fallbacks"]
    if fuse:  # our kernel, each weight's (lr, wd, rescale_grad) an input array
        assert "= _minpy_multi_" in ir and "hyper_inputs=1" in ir and "(3,) float32" in ir, ir
    else:  # lowered: elementwise ops, lr an input
        assert "_update" not in ir and "(1, 1) float32" in ir, ir


# ------------------------------------------------------------------ recompile limit

def test_recompile_limit_warns_once_then_runs_eagerly(capsys):
    """Past recompile_limit distinct graphs a site warns exactly once (naming the site, the limit and
    the last miss reason), records nothing more and stays correct; other sites are unaffected."""
    minpy_jit.config(recompile_limit=3)
    site = at(here() + 5)
    recorded = []
    for n in range(3, 12):
        x = arr(rand(n, 3, seed=n))
        before = minpy_jit.stats()["ops_recorded"]
        with minpy_jit.jit():
            y = nd.tanh(x * 2) - x
        recorded.append(minpy_jit.stats()["ops_recorded"] - before)
        assert_same(run_eager(lambda x: nd.tanh(x * 2) - x, x), y)
    x = arr(rand(13, 3, seed=13))
    other = at(here() + 1)
    with minpy_jit.jit():  # another site: still compiles
        z = nd.tanh(x * 2) - x
    assert_same(run_eager(lambda x: nd.tanh(x * 2) - x, x), z)
    err = capsys.readouterr().err
    warnings = [ln for ln in err.splitlines() if "WARNING" in ln]
    assert len(warnings) == 1, err
    assert site in warnings[0] and "limit 3" in warnings[0] and "Last reason: input %0 shape" in warnings[0]
    sites = minpy_jit.stats()["sites"]
    assert sites[site]["eager"] is True and sites[site]["compiles"] == 4, sites
    assert [r > 0 for r in recorded] == [True] * 4 + [False] * 5, recorded
    assert sites[other] == {"compiles": 1, "eager": False}, sites


def test_clear_cache_drops_graphs_and_lets_an_eager_site_compile_again(capsys):
    minpy_jit.config(recompile_limit=1)

    def body(x):
        with minpy_jit.jit():
            y = nd.relu(x - 0.5) * 3
        return y

    site = at(here() - 4)  # the `with` line
    xs = [arr(rand(n, 2, seed=n)) for n in (4, 5, 6)]
    for x in xs:
        assert_same(run_eager(lambda x: nd.relu(x - 0.5) * 3, x), body(x))
    assert minpy_jit.stats()["sites"][site]["eager"] is True  # past the limit of 1
    assert "WARNING" in capsys.readouterr().err
    minpy_jit.clear_cache()
    assert minpy_jit.graphs() == []
    before = minpy_jit.stats()
    assert_same(run_eager(lambda x: nd.relu(x - 0.5) * 3, xs[0]), body(xs[0]))
    after = minpy_jit.stats()
    assert after["cache_misses"] == before["cache_misses"] + 1 and after["executions"] == before["executions"] + 1
    assert after["sites"][site] == {"compiles": 1, "eager": False}, after["sites"]


def test_scopes_at_one_line_of_two_files_of_one_name_are_two_sites(tmp_path):
    """Sites were named (and keyed) by the file's base name and line, so a `with jit()` at the
    same line of two files called model.py shared one recompile counter: here each compiles 3
    graphs under recompile_limit=3, which together crossed the limit and sent both eager. The
    second file's site is now 'model.py:3 #2'."""
    import importlib.util
    minpy_jit.config(recompile_limit=3)
    bodies = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        path = tmp_path / d / "model.py"
        path.write_text("import minpy_jit\ndef body(x):\n    with minpy_jit.jit():\n"
                        "        return x * 2 + 1\n")
        spec = importlib.util.spec_from_file_location("model_%s" % d, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        bodies.append(mod.body)
    for body, rows in zip(bodies, ((2, 3, 4), (5, 6, 7))):
        for n in rows:
            x = arr(rand(n, 3, seed=n))
            assert_same(run_eager(lambda x: x * 2 + 1, x), body(x))
    sites = {k: v for k, v in minpy_jit.stats()["sites"].items() if k.startswith("model.py:3")}
    assert sites == {"model.py:3": {"compiles": 3, "eager": False},
                     "model.py:3 #2": {"compiles": 3, "eager": False}}, sites


# ------------------------------------------------------------------ logging and miss reasons

def test_log_recompiles_one_line_per_miss(capsys):
    """config(log="recompiles"): one stderr line per cache miss -- key, node count, compile ms,
    file:line of the jit() site, cause and reason -- and none for hits."""
    minpy_jit.config(log="recompiles")
    line = here() + 3
    for n in (23, 24, 23, 24, 25):
        x = arr(rand(n, 5, seed=n))
        with minpy_jit.jit():
            y = nd.relu(x - 0.25) * x
        assert_same(run_eager(lambda x: nd.relu(x - 0.25) * x, x), y)
    events = minpy_jit.events()
    misses = [e for e in events if not e["hit"]]
    assert len(misses) == 3 and len(events) == 5, events
    lines = compile_lines(capsys.readouterr().err)
    assert len(lines) == len(misses), lines
    for ln, e in zip(lines, misses):
        assert e["key"] in ln and "nodes=%d " % e["graph_nodes"] in ln, (ln, e)
        assert re.search(r" ms=\d+\.\d+ ", ln) and "at %s (scope exit)" % at(line) in ln, ln
        assert ln.endswith(": " + e["miss_reason"]), (ln, e)
    assert re.match(r"^input %0 shape \(\d+, \d+\) -> \(24, 5\)$", misses[1]["miss_reason"]), misses


def test_miss_reason_shape_change(capsys):
    """A new input shape: the reason names the input and both shapes."""
    minpy_jit.config(log="recompiles")
    for shape in ((32, 131), (17, 131)):
        x = arr(rand(*shape, seed=3))
        with minpy_jit.jit():
            y = nd.sigmoid(x) * 3 - x
        assert_same(run_eager(lambda x: nd.sigmoid(x) * 3 - x, x), y)
    reason = "input %0 shape (32, 131) -> (17, 131)"
    assert minpy_jit.events()[-1]["miss_reason"] == reason
    assert compile_lines(capsys.readouterr().err)[-1].endswith(": " + reason)


def test_miss_reason_scalar_change_before_lifting(capsys):
    """A scalar seen with a new value before it is hot: the reason names op index, op, attribute and
    both values. (At one site the first change already lifts a liftable scalar, so this is shown on a
    second site, and on an attribute that is never lifted.)"""
    minpy_jit.config(log="recompiles")
    x = arr(rand(9, 11, seed=4))
    with minpy_jit.jit():
        a = nd.sin(x) * 0.5
    with minpy_jit.jit():
        b = nd.sin(x) * 0.25
    assert minpy_jit.events()[-1]["miss_reason"].startswith("op 1 _mul_scalar scalar 0.5 -> 0.25")
    outs = []
    for c in (0.5, 0.25):
        with minpy_jit.jit():
            outs.append(nd.clip(x, -c, c))
    assert minpy_jit.events()[-1]["miss_reason"].startswith("op 0 clip a_min -0.5 -> -0.25, a_max 0.5 -> 0.25")
    lines = compile_lines(capsys.readouterr().err)
    assert "op 1 _mul_scalar scalar 0.5 -> 0.25" in lines[-3] and "op 0 clip a_min -0.5" in lines[-1], lines
    assert_same(run_eager(lambda x: (nd.sin(x) * 0.5, nd.sin(x) * 0.25, nd.clip(x, -0.5, 0.5),
                                     nd.clip(x, -0.25, 0.25)), x), (a, b, outs[0], outs[1]))


def test_miss_reason_different_op(capsys):
    """The same prefix, then a different op: the reason names the op index and both ops."""
    minpy_jit.config(log="recompiles")
    x = arr(rand(7, 19, seed=5))
    for f in (nd.relu, nd.tanh):
        with minpy_jit.jit():
            y = x + 1
            y = y * 2
            y = f(y)
        assert_same(run_eager(lambda x: f((x + 1) * 2), x), y)
    reason = minpy_jit.events()[-1]["miss_reason"]
    assert reason.startswith("sequence diverged at op 2: tanh vs relu"), reason
    assert compile_lines(capsys.readouterr().err)[-1].split(": ", 2)[-1] == reason


def test_diverging_op_keeps_its_source_line():
    """The op where a trace diverges from a compiled one is a new position: the miss reason says where
    it was recorded ("..., recorded at file:line", as in the README) and the new graph's printout
    carries that line on the new node."""
    x = arr(rand(7, 23, seed=6))
    line = here() + 5
    for f in (nd.relu, nd.tanh):
        with minpy_jit.jit():
            y = x + 1
            y = y * 2
            y = f(y)
        assert_same(run_eager(lambda x: f((x + 1) * 2), x), y)
    reason = minpy_jit.events()[-1]["miss_reason"]
    assert reason.startswith("sequence diverged at op 2: tanh vs relu"), reason
    assert reason.endswith("recorded at " + at(line)), reason
    tanh_line = [ln for ln in minpy_jit.last_graph().splitlines() if "= tanh(" in ln]
    assert len(tanh_line) == 1 and tanh_line[0].endswith("# " + at(line)), minpy_jit.last_graph()


def test_log_flushes_all_and_off(capsys):
    """log="flushes": one line per flush (hits too) with cause and user line; "all": flushes and
    recompiles; "": nothing."""
    x = arr(rand(6, 29, seed=7))

    def body(x):
        y = nd.exp(x) * 0.5
        y.asnumpy()
        return y - x

    body_line = body.__code__.co_firstlineno + 2  # the asnumpy() line
    outs = []
    for log in ("flushes", "all", ""):
        minpy_jit.config(log=log)
        line = here() + 1
        with minpy_jit.jit():
            outs.append(body(x))
        err = capsys.readouterr().err
        fl, cl = flush_lines(err), compile_lines(err)
        if log == "":
            assert err == "", err
            continue
        assert len(fl) == 2, err
        assert "flush asnumpy at %s: 2 ops" % at(body_line) in fl[0], fl
        assert "flush scope exit at %s: 1 ops" % at(line) in fl[1], fl
        if log == "flushes":
            assert cl == [] and "compiled" in fl[0] and "compiled" in fl[1], err
        else:
            assert len(cl) == 0 and "cache hit" in fl[0] and "cache hit" in fl[1], err  # graphs cached now
    for o in outs:
        assert_same(run_eager(body, x), o)
    minpy_jit.config(log="all")
    x2 = arr(rand(6, 31, seed=8))
    with minpy_jit.jit():
        o2 = body(x2)
    err = capsys.readouterr().err
    assert len(compile_lines(err)) == 2 and len(flush_lines(err)) == 2, err
    assert_same(run_eager(body, x2), o2)


# ------------------------------------------------------------------ environment variables (fresh processes)

_SCRIPT = textwrap.dedent("""\
    import json, sys
    import mxnet as mx
    from mxnet import nd
    import minpy_jit
    from minpy_jit import intercept
    out, hooks = [], []
    for n in (5, 3, 5):
        x = nd.arange(n * 4).reshape((n, 4)) / 7.0
        with minpy_jit.jit():
            hooks.append(intercept.hooks_active())
            y = nd.tanh(x) * 2 + 1
        out.append(y.asnumpy().tolist())
    # MXNet's own code in place: no stand-in, not one module's _LIB replaced
    untouched = (not intercept.hooks_installed() and mx.base._LIB is intercept._REAL_LIB
                 and all(getattr(m, "_LIB", intercept._REAL_LIB) is intercept._REAL_LIB
                         for name, m in list(sys.modules.items()) if name.startswith("mxnet")))
    print(json.dumps({"out": out, "hooks": hooks, "untouched": untouched, "stats": minpy_jit.stats(),
                      "config": minpy_jit.config()}))
    """)
_SCRIPT_WITH_LINE = 9


@pytest.fixture(scope="module")
def fresh_runs(tmp_path_factory):
    """The script above in two fresh interpreters, concurrently: MINPY_JIT_LOG=recompiles, and
    MINPY_JIT=0 (with MINPY_JIT_LOG=all). PYTHONPATH and the rest of the environment unchanged."""
    path = tmp_path_factory.mktemp("env") / "envscript.py"
    path.write_text(_SCRIPT)
    base = {k: v for k, v in os.environ.items() if k not in ("MINPY_JIT", "MINPY_JIT_LOG")}
    envs = {"log": dict(base, MINPY_JIT_LOG="recompiles"), "off": dict(base, MINPY_JIT="0", MINPY_JIT_LOG="all")}
    procs = {k: subprocess.Popen([sys.executable, str(path)], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for k, env in envs.items()}
    res = {}
    for k, p in procs.items():
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        res[k] = (json.loads(out.strip().splitlines()[-1]), err)
    return res


def _script_expected():
    return [(nd.tanh(nd.arange(n * 4).reshape((n, 4)) / 7.0) * 2 + 1).asnumpy() for n in (5, 3, 5)]


def test_env_minpy_jit_log_recompiles(fresh_runs):
    """MINPY_JIT_LOG=recompiles read at import: one stderr line per miss (first compile, then the
    shape change), none for the hit, each naming the script line; results equal eager."""
    data, err = fresh_runs["log"]
    assert data["config"]["log_recompiles"] is True and data["config"]["log_flushes"] is False
    lines = compile_lines(err)
    assert len(lines) == 2 and data["stats"]["cache_misses"] == 2 and data["stats"]["cache_hits"] == 1, err
    where = "at envscript.py:%d (scope exit)" % _SCRIPT_WITH_LINE
    assert all(where in ln for ln in lines), lines
    assert lines[0].endswith("first compile (cache empty)") and lines[1].endswith("input %0 shape (5, 4) -> (3, 4)")
    assert not flush_lines(err) and "WARNING" not in err
    assert data["hooks"] == [True] * 3 and data["untouched"] is False
    for e, j in zip(_script_expected(), data["out"]):
        np.testing.assert_allclose(np.array(j, dtype=np.float32), e, rtol=1e-6)  # fused tanh: <= 2 ulp


def test_env_minpy_jit_0_at_import(fresh_runs):
    """MINPY_JIT=0 from process start: jit() installs no hooks (MXNet's code is untouched), records
    and logs nothing (even with MINPY_JIT_LOG=all), results equal eager."""
    data, err = fresh_runs["off"]
    assert "minpy_jit:" not in err, err
    assert data["hooks"] == [False] * 3 and data["untouched"] is True
    st = data["stats"]
    assert st["ops_recorded"] == 0 and st["flushes"] == {} and st["cache_misses"] == 0 and st["sites"] == {}, st
    for e, j in zip(_script_expected(), data["out"]):
        np.testing.assert_allclose(np.array(j, dtype=np.float32), e, rtol=1e-6)  # fused tanh: <= 2 ulp


@pytest.mark.parametrize("value", ["off", "false", " No ", "0"])
def test_minpy_jit_0_spellings_and_nested_scopes(monkeypatch, value):
    """Every documented 'off' spelling disables jit(), including nested scopes, decorators and the
    log; turning it back on mid-process works."""
    def fn(x):
        y = nd.relu(x * 2 - 0.5)
        return y, y.sum()

    x = arr(rand(4, 5, seed=39))
    expected = run_eager(fn, x)
    minpy_jit.config(log="all")
    monkeypatch.setenv("MINPY_JIT", value)

    @minpy_jit.jit()
    def deco(x):
        return fn(x)

    with minpy_jit.jit():
        with minpy_jit.jit():
            assert not intercept.hooks_active()
            got = fn(x)
        got2 = deco(x)
    assert minpy_jit.stats()["ops_recorded"] == 0 and minpy_jit.events() == []
    assert_same(expected, got)
    assert_same(expected, got2)
    monkeypatch.setenv("MINPY_JIT", "1")
    with minpy_jit.jit():
        assert intercept.hooks_active()
        got3 = fn(x)
    assert minpy_jit.stats()["ops_recorded"] > 0
    assert_same(expected, got3)


# ------------------------------------------------------------------ events, fallbacks

def test_events_cause_where_and_fallbacks():
    """events(): each flush with its cause, the user line that caused it (the scope exit at the
    `with` line), ops, hit/eager and the miss reason; data-dependent ops counted as fallbacks."""
    keep = arr(np.array([1, 0, 1, 1, 0, 1, 1], dtype=np.float32))

    def fn(x):
        y = nd.relu(x) * 2
        total = y.sum().asscalar()
        m = nd.contrib.boolean_mask(y - total, keep)  # `y - total` is pending: flushed first
        return y * total, m + 1

    runs = []
    for rep in range(2):
        x = arr(rand(7, 3, seed=11))
        minpy_jit.reset_stats()
        with_line = here() + 1
        with minpy_jit.jit():
            got = fn(x)
        assert_same(run_eager(fn, x), got)
        runs.append((minpy_jit.events(), minpy_jit.stats(), with_line))
    fn_first = fn.__code__.co_firstlineno
    for rep, (events, st, with_line) in enumerate(runs):
        assert [e["cause"] for e in events] == ["asnumpy", "eager op _contrib_boolean_mask", "scope exit"], events
        assert [e["where"] for e in events] == [at(fn_first + 2), at(fn_first + 3), at(with_line)], events
        assert [e["ops"] for e in events] == [3, 1, 2], events
        for e in events:
            assert set(e) >= {"cause", "where", "ops", "hit", "eager", "miss_reason", "key", "graph_nodes"}
            assert e["eager"] is False
        compiled = events
        if rep == 0:
            assert all(not e["hit"] and e["miss_reason"] for e in compiled), events
        else:
            assert all(e["hit"] and e["miss_reason"] == "" for e in compiled), events
            assert [e["key"] for e in compiled] == [e["key"] for e in runs[0][0]]
        assert st["fallbacks"] == {"_contrib_boolean_mask": 1}, st
        assert any(k.startswith("_contrib_boolean_mask") for k in st["fallback_reasons"]), st


def test_events_eager_replay_has_reason():
    """A trace writing an array after a write through a view of it replays eagerly: the event
    says so. (The write through the view itself is MXNet's op, a counted fallback.)"""
    def fn(x):
        v = x[2:6]
        v += 1
        x += 2
        return x * 1

    x = arr(rand(8, 3, seed=12))
    want = run_eager(fn, x.copy())
    with minpy_jit.jit():
        got = fn(x)
    assert_same(want, got)
    eager = [e for e in minpy_jit.events() if e["eager"]]
    assert eager and all("view" in e["miss_reason"] and e["where"].startswith(THIS) for e in eager), \
        minpy_jit.events()
    assert minpy_jit.stats()["eager_replays"] >= 1
    assert any("writes a view" in r for r in minpy_jit.stats()["fallback_reasons"])


def test_trace_with_no_live_result_is_not_a_compile_failure():
    """A block whose results are all discarded (`nd.exp(x) * 2` as a statement): nothing is live, so
    nothing needs to run (README: dead intermediates are never materialised). The flush must not be
    reported as a failed compile nor replayed eagerly."""
    x = arr(rand(3, 79, seed=16))
    with minpy_jit.jit():
        nd.exp(x) * 2
    assert_same(run_eager(lambda x: x, x), x)
    ev = minpy_jit.events()[-1]
    assert "compile failed" not in ev["miss_reason"] and not ev["eager"], ev
    assert minpy_jit.stats()["eager_replays"] == 0, minpy_jit.stats()


# ------------------------------------------------------------------ explain

def _explained(x, keep):
    y = nd.tanh(x) * 3
    s = y.sum().asscalar()
    m = nd.contrib.boolean_mask(y + s, keep)
    return y + s, nd.relu(m)


def test_explain():
    """explain(fn, *args): fn's result (eager-equal), each flush with cause and user line, compiles,
    hits, eager fallbacks; str() lists flushes and miss reasons. A second call: all hits."""
    x = arr(rand(5, 37, seed=13))
    keep = arr(np.array([1, 0, 1, 1, 0], dtype=np.float32))
    expected = run_eager(_explained, x, keep)
    line = here() + 1
    ex = minpy_jit.explain(_explained, x, keep)
    assert_same(expected, ex.result)
    first = _explained.__code__.co_firstlineno
    assert [e["cause"] for e in ex.flushes] == ["asnumpy", "eager op _contrib_boolean_mask", "scope exit"], \
        ex.flushes
    assert [e["where"] for e in ex.flushes] == [at(first + 2), at(first + 3), at(line)], ex.flushes
    assert len(ex.compiles) == 3 and ex.hits == [] and ex.eager == [], ex
    assert ex.fallbacks == {"_contrib_boolean_mask": 1}
    assert ex.ops_recorded >= 4
    text = str(ex)
    for e in ex.flushes:
        assert "%s at %s" % (e["cause"], e["where"]) in text, text
    for e in ex.compiles:
        assert "compiled %s" % e["key"] in text and "miss: " + e["miss_reason"] in text, text
    assert "eager fallback: _contrib_boolean_mask x1" in text

    ex2 = minpy_jit.explain(_explained, x, keep)
    assert_same(expected, ex2.result)
    assert len(ex2.hits) == 3 and ex2.compiles == [], ex2
    assert [e["key"] for e in ex2.hits] == [e["key"] for e in ex.compiles]
    assert "miss:" not in str(ex2) and "hit %s" % ex.compiles[0]["key"] in str(ex2)


def test_explain_eager_replay():
    """explain() of a function whose in-place write goes through a view lists the eager replay."""
    def fn(x):
        y = nd.relu(x) + 1
        y[1:3] += 2
        return y * 2

    x = arr(rand(4, 41, seed=14))
    ex = minpy_jit.explain(fn, x)
    assert_same(run_eager(fn, x), ex.result)
    assert ex.eager and "eager" in str(ex), ex


def test_explain_function_recording_nothing():
    """explain() of a function that records no op reports no flush -- not the previous, unrelated
    flush of the process."""
    x = arr(rand(3, 43, seed=15))
    with minpy_jit.jit():
        y = x * 2
    ex = minpy_jit.explain(lambda: 3)
    assert ex.result == 3
    assert ex.flushes == [] and ex.compiles == [] and ex.ops_recorded == 0, str(ex)
    assert_same(run_eager(lambda x: x * 2, x), y)


# ------------------------------------------------------------------ debug_print

def test_debug_print_prints_when_graph_runs_without_flushing(capfd):
    """debug_print inside jit(): no flush (only the scope exit), the value printed when the graph runs
    equals the eager value, every run (cache hits too) prints, and the graph stays one graph."""
    xs = [arr(rand(4, 47, seed=s)) for s in (16, 17, 18)]
    outs = []
    for x in xs:
        with minpy_jit.jit():
            s = (x * 3).sum()
            minpy_jit.debug_print(s, "dbg {}")
            z = s + 1
        outs.append(z)
    mx.nd.waitall()
    out = capfd.readouterr().out
    st = minpy_jit.stats()
    assert st["flushes"] == {"scope exit": 3} and st["cache_misses"] == 1 and st["cache_hits"] == 2, st
    printed = [ln for ln in out.splitlines() if ln.startswith("dbg ")]
    assert len(printed) == 3, out
    for ln, x, z in zip(printed, xs, outs):
        e = run_eager(lambda x: (x * 3).sum(), x)
        assert ln == "dbg {}".format(e.asnumpy()), (ln, e)
        assert_same(e + 1, z)
    assert "Custom(" in minpy_jit.last_graph()
    # outside jit(): prints at once and returns x
    y = minpy_jit.debug_print(xs[0].sum(), "now {}")
    assert capfd.readouterr().out.strip() == "now {}".format(xs[0].sum().asnumpy())
    assert_same(xs[0].sum(), y)


# ------------------------------------------------------------------ the graph: printout, JSON, Python

_IR_NODE = re.compile(r"^\s+(%\d+(?:, %\d+)*) = (\w+)\((.*?)\)\s+(\([\d, ]*\)) (\w+)\s+# (\S+)$")


def _graph_body(x, w, b):
    h = nd.dot(x, w)
    y = nd.relu(nd.broadcast_add(h, nd.expand_dims(b, axis=0)))
    s = nd.sum(y * y, axis=1)
    return y, s


def test_ir_printout_lines(mxnet_kernels):  # the fused form: test_fusion.py
    """last_graph() / graphs()[0]['ir']: a title, one line per input and per node
    (`%3 = relu(%2)  (shape) dtype  # file:line`), and a return line."""
    x, w, b = arr(rand(4, 53, seed=19)), arr(rand(53, 3, seed=20)), arr(rand(3, seed=21))
    with minpy_jit.jit():
        y, s = _graph_body(x, w, b)
    ir = minpy_jit.last_graph()
    g = minpy_jit.graphs()[0]
    assert g["ir"] == ir and ir.startswith("graph " + g["key"]), ir
    first = _graph_body.__code__.co_firstlineno
    want = {"dot": first + 1, "expand_dims": first + 2, "broadcast_add": first + 2, "relu": first + 2,
            "elemwise_mul": first + 3, "_mul": first + 3, "broadcast_mul": first + 3, "sum": first + 3}
    nodes = [ln for ln in ir.splitlines() if "= input" not in ln and re.match(r"^\s+%", ln)]
    assert len(nodes) == g["nodes"], ir
    for ln in nodes:
        m = _IR_NODE.match(ln)
        assert m, ln
        assert m.group(6) == at(want[m.group(2)]), ln
    shapes = {m.group(2): m.group(4) for m in map(_IR_NODE.match, nodes)}
    assert shapes["relu"] == str(y.shape) and shapes["sum"] == str(s.shape) and shapes["dot"] == str(y.shape)
    inputs = [re.match(r"^\s+%(\d+) = input\s+(\(.*\)) float32$", ln) for ln in ir.splitlines() if "= input" in ln]
    assert all(inputs) and len(inputs) == 3, ir
    steps = [st for st in g["steps"] if st["input"]]
    assert [(int(m.group(1)), m.group(2)) for m in inputs] == [(st["value"], str(tuple(st["shape"]))) for st in steps]
    assert sorted(m.group(2) for m in inputs) == sorted(str(a.shape) for a in (x, w, b)), ir
    assert ir.rstrip().splitlines()[-1].strip().startswith("return ")
    assert_same(run_eager(_graph_body, x, w, b), (y, s))


def _inputs_by_step(g, arrays):
    """The graph's inputs (in recording order) matched to the given arrays by shape (all distinct)."""
    by_shape = {a.shape: a for a in arrays}
    assert len(by_shape) == len(arrays)
    return [by_shape[tuple(s["shape"])] for s in g["steps"] if s["input"]]


def _outputs_by_step(g):
    shape_of = {s["value"] + i: tuple(s["shape"]) for s in g["steps"] for i in range(s["nout"])}
    return [shape_of[v] for v, _ in g["outputs"]]


def test_graph_json_runs_in_mxnet_and_reproduces_values():
    """graphs()[0]['json'] loads with mx.sym.load_json; run with mx.nd.CachedOp and with sym.eval on
    the same inputs it reproduces the jitted values."""
    x, w, b = arr(rand(4, 59, seed=22)), arr(rand(59, 3, seed=23)), arr(rand(3, seed=24))
    with minpy_jit.jit():
        y, s = _graph_body(x, w, b)
    g = minpy_jit.graphs()[0]
    assert minpy_jit.to_json(g) == g["json"]
    sym = mx.sym.load_json(g["json"])
    value_of = {"v%d" % st["value"]: a for st, a in zip([st for st in g["steps"] if st["input"]],
                                                          _inputs_by_step(g, [x, w, b]))}
    names = sym.list_inputs()
    assert sorted(names) == sorted(value_of), (names, value_of)
    got = {a.shape: a for a in (y, s)}
    expected = [got[shape] for shape in _outputs_by_step(g)]
    outs = mx.nd.CachedOp(sym)(*[value_of[n] for n in names])
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    assert_same(expected, list(outs))
    assert_same(expected, sym.eval(ctx=mx.cpu(), **value_of))
    assert_same(run_eager(_graph_body, x, w, b), (y, s))


def test_to_python_and_compile_python_reproduce_values():
    """to_python(graph) is readable source; compile_python(graph) is a function of the graph's
    inputs (recording order) returning its outputs in the printout's return order."""
    x, w, b = arr(rand(4, 61, seed=25)), arr(rand(61, 3, seed=26)), arr(rand(3, seed=27))
    with minpy_jit.jit():
        y, s = _graph_body(x, w, b)
    g = minpy_jit.graphs()[0]
    src = minpy_jit.to_python(g)
    assert src.startswith("def graph_%s(" % g["key"][:8]) and "_op('dot')" in src and "return (" in src, src
    fn = minpy_jit.compile_python(g)
    got = {a.shape: a for a in (y, s)}
    assert_same([got[sh] for sh in _outputs_by_step(g)], list(fn(*_inputs_by_step(g, [x, w, b]))))
    assert_same(run_eager(_graph_body, x, w, b), (y, s))


def test_compile_python_of_lifted_scalar_graph():
    """A graph with lifted scalars takes them as (1, 1) inputs, in recording order."""
    x = arr(rand(5, 67, seed=28))
    for i in range(3):
        s, t = 0.3 + 0.1 * i, -0.5 * i
        with minpy_jit.jit():
            y = nd.tanh(x * s) + t
    g = minpy_jit.graphs()[0]
    assert [tuple(st["shape"]) for st in g["steps"] if st["input"]] == [x.shape, (1, 1), (1, 1)], g["ir"]
    fn = minpy_jit.compile_python(g)
    (out,) = fn(x, nd.full((1, 1), s), nd.full((1, 1), t))
    assert_same(y, out)
    assert_same(run_eager(lambda x: nd.tanh(x * s) + t, x), y)


# ------------------------------------------------------------------ explain after many functions (keep last)

def test_explain_keeps_explaining_many_distinct_functions():
    """Every explain() call opens its jit() scope on the same line of explain.py. Explaining more than
    recompile_limit distinct functions/shapes in one process must still record and report each call
    (each one's compile, attributed to the line that called explain) -- not run eagerly and report a
    stale event."""
    limit = minpy_jit.config()["recompile_limit"]
    for n in range(2, limit + 4):
        x = arr(rand(n, 71, seed=n))
        line = here() + 1
        ex = minpy_jit.explain(lambda x: nd.relu(x) + 1, x)
        assert_same(run_eager(lambda x: nd.relu(x) + 1, x), ex.result)
        assert ex.ops_recorded == 2, (n, str(ex), minpy_jit.stats()["sites"])
        assert len(ex.compiles) == 1 and ex.compiles[0]["where"] == at(line), (n, str(ex))
