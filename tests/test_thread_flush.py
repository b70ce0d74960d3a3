"""A trace flushed by another thread: its owner must see the flush's results, never run ahead of it.

Thread B's `nd.waitall()` flushes thread A's pending trace too. While B is inside that flush it can
let A run (the GIL is released or switched, e.g. while B's recompile log calls Python). A must then
wait for B's flush: before the fix A read a result that had not been launched yet, and A's next ops
ran eagerly ahead of its own pending ones.
"""
import threading

import mxnet as mx
import numpy as np
from mxnet import nd

import minpy_jit
from minpy_jit import _core


def _flush_from_other_thread(owner_work):
    """Thread A records `x = a * 2.71828` in jit(), then B flushes it with nd.waitall(); while B
    is inside that flush (in its compile log callback) A runs owner_work(x). Returns what it gave."""
    recorded, inside_flush, done = threading.Event(), threading.Event(), threading.Event()
    flusher = {}
    result = {}

    def log(line):
        if threading.get_ident() == flusher.get("ident") and "compile" in line:
            inside_flush.set()
            done.wait(0.5)  # sleeping releases the GIL: A runs now, in the middle of B's flush

    def owner():
        a = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
        a.wait_to_read()
        with minpy_jit.jit():
            x = a * 2.71828
            recorded.set()
            inside_flush.wait(5)
            result["value"] = owner_work(x)
        done.set()

    def other():
        flusher["ident"] = threading.get_ident()
        recorded.wait(5)
        nd.waitall()

    minpy_jit.clear_cache()  # a miss, so that B's flush logs a compile
    old = minpy_jit.config()
    _core.set_log(log)
    minpy_jit.config(log="recompiles")
    try:
        threads = [threading.Thread(target=owner), threading.Thread(target=other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert not any(t.is_alive() for t in threads), "deadlock"
    finally:
        from minpy_jit import diagnostics
        _core.set_log(diagnostics._log)
        minpy_jit.config(log="recompiles" if old["log_recompiles"] else "")
    assert inside_flush.is_set(), "the other thread did not flush this trace"
    return result["value"]


def _expected():
    return np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(2.71828)


def test_owner_reads_a_result_another_thread_is_flushing():
    got = _flush_from_other_thread(lambda x: x.asnumpy())
    np.testing.assert_array_equal(got, (nd.arange(6).reshape((2, 3)) * 2.71828).asnumpy())
    np.testing.assert_allclose(got, _expected(), rtol=1e-6)


def test_owner_ops_wait_for_another_threads_flush_of_its_trace():
    before = minpy_jit.stats()["fallbacks"]
    got = _flush_from_other_thread(lambda x: (x + 1).asnumpy())
    np.testing.assert_allclose(got, _expected() + 1, rtol=1e-6)
    assert minpy_jit.stats()["fallbacks"] == before, "the owner's op ran eagerly as if in a callback"


def test_result_the_owner_lets_go_of_during_another_threads_flush_still_reaches_its_readers():
    """Thread B's read flushes thread A's recorded forward, cut into independent parts where A
    holds results (parts.cc). A runs on while B's flush runs a part without the GIL: here it lets
    go of h (a local going out of scope in real code) after B cut the trace at h and before h's
    part runs. That part then had no live output and was dropped, so y = h * 3 read an array
    never written (zeros) outside the autograd graph, and y.backward() raised MXNet's 'Cannot
    differentiate node' (tests/stress/threads.py, reads_keep_recorded=False, step 6548 of 10,000)."""
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3) / 7)
    w1, w2 = nd.ones((2, 3)), nd.array(np.full((2, 3), 0.5, np.float32))

    def forward(x, w1, w2):
        a = x * w1
        h = nd.relu(x * w2 - 0.1)
        return a, h, h * 3

    ew1, ew2 = w1.copy(), w2.copy()
    for w in (ew1, ew2):
        w.attach_grad()
    with mx.autograd.record():
        _, _, ey = forward(x, ew1, ew2)
    ey.backward()
    want_y, want_grad = ey.asnumpy(), ew2.grad.asnumpy()

    recorded, first_part_ran, dropped = threading.Event(), threading.Event(), threading.Event()
    flusher, result = {}, {}

    def log(line):
        if threading.get_ident() == flusher.get("ident") and not first_part_ran.is_set():
            first_part_ran.set()  # B ran A's first part (a = x * w1); h's part is next
            dropped.wait(5)  # sleeping releases the GIL: A drops h now, in the middle of B's flush

    def owner():
        for w in (w1, w2):
            w.attach_grad()
        with minpy_jit.jit():
            with mx.autograd.record():
                parts = list(forward(x, w1, w2))
                recorded.set()
                first_part_ran.wait(5)
                del parts[1]  # h: only the trace holds it now
                dropped.set()
            y = parts[1]
            try:
                y.backward()
                result["y"], result["grad"] = y.asnumpy(), w2.grad.asnumpy()
            except mx.base.MXNetError as e:
                result["error"] = str(e).splitlines()[-1]

    def other():
        flusher["ident"] = threading.get_ident()
        recorded.wait(5)
        nd.waitall()

    old = minpy_jit.config()
    _core.set_log(log)
    minpy_jit.config(log="flushes", reads_keep_recorded=False)
    try:
        threads = [threading.Thread(target=owner), threading.Thread(target=other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert not any(t.is_alive() for t in threads), "deadlock"
    finally:
        from minpy_jit import diagnostics
        _core.set_log(diagnostics._log)
        minpy_jit.config(log=",".join(k for k in ("recompiles", "flushes") if old["log_" + k]),
                         reads_keep_recorded=old["reads_keep_recorded"])
    assert first_part_ran.is_set(), "the other thread did not flush this trace in parts"
    assert "error" not in result, result["error"]
    np.testing.assert_array_equal(result["y"], want_y)
    np.testing.assert_array_equal(result["grad"], want_grad)


def test_a_trace_flushed_by_another_thread_runs_under_its_own_numpy_shape_semantics():
    """Numpy shape semantics are per thread in MXNet. Thread A records under them; thread B,
    without them, flushes A's trace with nd.waitall(): the trace must run under A's semantics.
    Before, B's flush failed shape inference on A's zero-size result ('Operator _npi_add_scalar
    inferring shapes failed', raised in B), an error eager never raises."""
    recorded, flushed = threading.Event(), threading.Event()
    out = {}

    def owner():
        with mx.util.np_shape(True):
            x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3)).as_np_ndarray()
            want_s, want_z = mx.np.sum(x * 2).asnumpy(), (mx.np.zeros((0, 3)) + 1).asnumpy()
            try:
                with minpy_jit.jit():
                    s = mx.np.sum(x * 2)  # 0-d
                    z = mx.np.zeros((0, 3)) + 1  # zero-size
                    recorded.set()
                    flushed.wait(10)
                    got_s, got_z = s.asnumpy(), z.asnumpy()
                out["owner"] = (got_s.shape == () and np.array_equal(got_s, want_s) and got_z.shape == (0, 3)
                                and np.array_equal(got_z, want_z), got_s, got_z.shape)
            except mx.MXNetError as e:
                out["owner"] = str(e)

    def other():
        recorded.wait(10)
        try:
            nd.waitall()
            out["other"] = "ok"
        except mx.MXNetError as e:
            out["other"] = str(e)
        flushed.set()

    def foreign_flushes():
        return sum(n for cause, n in minpy_jit.stats()["flushes"].items() if "(from another thread)" in cause)

    replays, foreign = minpy_jit.stats()["eager_replays"], foreign_flushes()
    threads = [threading.Thread(target=owner), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert out["other"] == "ok", out
    assert foreign_flushes() > foreign, "the other thread did not flush the owner's trace"
    assert out["owner"][0] is True, out
    assert minpy_jit.stats()["eager_replays"] == replays, "the graph was refused and replayed op by op"


def _site_step(a, first, last):
    """Two ops in one jit() scope (one site for every thread): `first` recorded, then `last`."""
    with minpy_jit.jit():
        y = first(a)
        last(a)
    return y


def test_ops_after_another_thread_sent_the_site_eager_run_after_the_pending_ones():
    """Thread A has recorded y = a * 2 at a jit() site when thread B's compiles there pass the
    recompile limit. A's next op then runs eagerly where it is called; before the fix it ran
    ahead of A's pending y (the C API guard does not flush inside an op call), so y read the
    incremented a."""
    old = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=1)
    recorded, eager_now = threading.Event(), threading.Event()
    out = {}

    def first(a):
        y = a * 2
        if threading.current_thread().name == "owner":
            recorded.set()
            eager_now.wait(10)
        return y

    def bump(a):
        a += 1

    def owner():
        a = nd.array(np.arange(4, dtype=np.float32))
        a.wait_to_read()
        out["y"] = _site_step(a, first, bump)
        out["a"] = a.asnumpy()
        out["y"] = out["y"].asnumpy()

    others = [nd.ones((n,)) for n in (5, 6, 7)]  # made now: an eager op would flush A's trace
    nd.waitall()
    t = threading.Thread(target=owner, name="owner")
    try:
        t.start()
        assert recorded.wait(10)
        for b in others:  # new graphs at the same site and flush: past the limit of 1
            _site_step(b, lambda a: a * 2, lambda a: None)
        eager_now.set()
        t.join(30)
    finally:
        eager_now.set()
        minpy_jit.config(recompile_limit=old)
    a = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(out["y"], a * 2)
    np.testing.assert_array_equal(out["a"], a + 1)
