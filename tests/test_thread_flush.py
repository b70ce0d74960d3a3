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
