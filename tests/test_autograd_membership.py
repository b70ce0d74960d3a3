"""Which arrays are in MXNet's autograd graph, and what a backward() does to them, as eagerly.

Eager MXNet records every op called under record() whose inputs are in the graph, and each
array such an op reads joins the graph: writing into it later under record() raises
('Assigning to NDArrays that are already in a computational graph'). A backward() without
retain_graph clears the autograd entry of every array it visits, constants included, so a
later backward() through another recorded graph that read the same constant raises ('The any
container is empty'). Found by the fuzzer: seeds 308087, 87630, 314032, 318000, 413478, 319113
(the backward), 312572, 403550 (the dead op).
"""
from mxnet import autograd, nd

from conftest import assert_same, rand, run_both


def caught(events, fn, *args, **kw):
    """Calls fn; appends the type name of what it raised, or 'ok'."""
    try:
        fn(*args, **kw)
        events.append("ok")
    except Exception as e:  # noqa: BLE001 - the type is the observation
        events.append(type(e).__name__)


def test_backward_clears_a_constant_that_another_recorded_graph_reads():
    """y1's graph (inference mode: a trace of its own) and y2's both read the constant c; y2's
    backward (without retain_graph) clears c's autograd entry, so y1's backward raises in
    eager MXNet. jit() ran y2's backward inside its own graph, which left c alone."""
    def prog(c, w):
        w.attach_grad()
        events = []
        with autograd.record(train_mode=False):
            y1 = nd.broadcast_mul(w, c)
        with autograd.record():
            y2 = nd.sum(nd.broadcast_mul(w, c))
        caught(events, y2.backward)
        caught(events, y1.backward)
        return events, w.grad

    res = run_both(prog, nd.array(rand(1, 1, seed=1)), nd.array(rand(2, 3, seed=2)))
    assert res.eager[0] == ["ok", "MXNetError"]
    assert_same(res.eager, res.jitted)


def test_backward_without_a_shared_constant_still_runs_in_the_graph():
    """The rule above costs nothing in an ordinary step: its backward runs inside the graph."""
    def prog(c, w):
        w.attach_grad()
        with autograd.record():
            y = nd.sum(nd.broadcast_mul(w, c))
        y.backward()
        return w.grad

    res = run_both(prog, nd.array(rand(1, 1, seed=1)), nd.array(rand(2, 3, seed=2)))
    assert_same(res.eager, res.jitted)
    assert res.stats["backward_in_graph"] == 1


def test_dead_recorded_op_puts_its_input_in_the_graph():
    """dot(v, a) is recorded (v has a gradient buffer) and its result dropped: eagerly `a` is in
    the autograd graph all the same, and the write into it under record() raises (after
    writing). jit() dropped the dead dot, and the write went through silently."""
    def prog(v, a):
        v.attach_grad()
        events = []
        with autograd.record():
            d = nd.dot(v, a)
            del d
            caught(events, a.__setitem__, slice(None), a * 2 + 1)
        return events, a

    res = run_both(prog, nd.array(rand(2, 3, seed=1)), nd.array(rand(3, 3, seed=2)))
    assert res.eager[0] == ["MXNetError"]
    assert_same(res.eager, res.jitted)
