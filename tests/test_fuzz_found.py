"""Programs the differential fuzzer (tests/stress/fuzz.py) found to differ under jit(), shrunk,
kept as regressions. Each names the fuzz seed it came from; each runs eagerly and under jit()
and compares what the program observed: values, gradients, and the type of every exception
it caught (in order).
"""

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, nd

import minpy_jit
from conftest import assert_same, jit_or_eager, rand, run_both


def caught(events, fn, *args, **kw):
    """Calls fn; appends the type name of what it raised (MXNet's error for OpInputError) or 'ok'."""
    try:
        fn(*args, **kw)
        events.append("ok")
    except minpy_jit.OpInputError:
        events.append("MXNetError")
    except Exception as e:  # noqa: BLE001 - the type is the observation
        events.append(type(e).__name__)


def grad_leaf(x, req="write"):
    """x with a gradient buffer (run_both hands each run a fresh copy, without one)."""
    x.attach_grad(grad_req=req)
    return x


def test_record_refuses_overwriting_a_leaf_with_gradient():
    """Fuzz seed 13. Under record(), MXNet runs `copyto` into an array that has a gradient buffer
    and then refuses to record it (MXNetError at the call; the value is written). jit() raised at
    the backward instead, as a RuntimeError, and lost the gradient."""
    def prog(x):
        events = []
        grad_leaf(x)
        with autograd.record():
            y = nd.exp(x)
            caught(events, y.copyto, x)
            z = x * -0.75
        caught(events, z.backward)
        return events, x, x.grad
    res = run_both(prog, nd.array(rand(3, 1, seed=1)))
    assert res.eager[0] == ["MXNetError", "ok"]
    assert_same(res.eager, res.jitted)


def test_record_refuses_in_place_update_of_a_recorded_input():
    """Fuzz seed 1028: `elemwise_add(x, x, out=x)` under record(): eager raises at the call
    ("Inplace operations ... are not supported when recording")."""
    def prog(x):
        events = []
        grad_leaf(x)
        with autograd.record():
            caught(events, nd.elemwise_add, x, x, out=x)
            y = nd.sin(x)
        caught(events, y.backward)
        return events, x, x.grad
    res = run_both(prog, nd.array(rand(4, 2, seed=2)))
    assert res.eager[0][0] == "MXNetError"
    assert_same(res.eager, res.jitted)


def test_ops_outside_the_gradient_graph_under_record():
    """Fuzz seed 150. Under record(), ops whose inputs are all outside the autograd graph are not
    recorded by MXNet, so writing their results in place is allowed. jit() ran them in one
    recorded graph with a differentiable op, which put `y` in the graph, and the in-place
    write then failed at the scope exit."""
    def prog(x, w):
        events = []
        grad_leaf(x)
        y = nd.dot(x, w, transpose_b=True)
        y.wait_to_read()
        with autograd.record():
            h = nd.relu(x)
            caught(events, y.__setitem__, slice(None), y * 2 + 1)
        caught(events, h.backward)
        return events, y, h, x.grad
    res = run_both(prog, nd.array(rand(4, 4, seed=3)), nd.array(rand(2, 4, seed=4)))
    assert res.eager[0] == ["ok", "ok"]
    assert_same(res.eager, res.jitted)


def test_backward_from_an_array_outside_the_graph_fails_as_eager():
    """An op under record() whose inputs need no gradient gives an array outside the graph:
    backward from it raises in eager MXNet, and so it must under jit() (where the op used to
    share a recorded graph with others)."""
    def prog(x, c):
        events = []
        grad_leaf(x)
        with autograd.record():
            y = nd.tanh(x)
            k = c * 3
        caught(events, k.backward)
        caught(events, y.backward)
        return events, x.grad, k
    res = run_both(prog, nd.array(rand(3, seed=5)), nd.array(rand(3, seed=6)))
    assert res.eager[0] == ["MXNetError", "ok"]
    assert_same(res.eager, res.jitted)


def test_backward_through_an_op_without_gradient_raises():
    """Fuzz seed 1111: backward through `shuffle` (no gradient) raises in eager MXNet; jit()
    wrapped the op in BlockGrad and silently gave zero gradients."""
    def prog(x):
        events = []
        grad_leaf(x)
        mx.random.seed(7)
        with autograd.record():
            y = nd.random.shuffle(x)
        caught(events, y.backward)
        with autograd.record():
            z = nd.random.shuffle(x) * 2  # the op is known to have no gradient by now
        caught(events, z.backward)
        return events, x.grad
    res = run_both(prog, nd.array(rand(4, seed=8)))
    assert res.eager[0] == ["MXNetError", "MXNetError"]
    assert_same(res.eager, res.jitted)


def test_ops_outside_the_graph_form_their_own_segment():
    """Under record(), a run of ops that need no gradient is one segment run outside the graph,
    the differentiable run after it another; values and gradients as eager's."""
    x = grad_leaf(nd.array(rand(5, 3, seed=9)))
    c = nd.array(rand(5, 3, seed=10))
    minpy_jit.reset_stats()
    with minpy_jit.jit():
        with autograd.record():
            k = nd.tanh(c * 0.5 + 1)
            y = (nd.sigmoid(x) * k).sum()
        y.backward()
    s = minpy_jit.stats()
    assert s["flushes"].get("autograd: op joins the gradient graph") == 1, s["flushes"]
    want_k = nd.tanh(c * 0.5 + 1)
    np.testing.assert_allclose(k.asnumpy(), want_k.asnumpy(), rtol=1e-6)  # fused tanh: <= 2 ulp
    sx = nd.sigmoid(nd.array(rand(5, 3, seed=9)))
    np.testing.assert_allclose(x.grad.asnumpy(), (sx * (1 - sx) * want_k).asnumpy(), rtol=1e-6)


def test_multi_sgd_update_rounds_as_mxnet_kernel():
    """Fuzz seeds 3 and 1095: `multi_sgd_update` with weight decay, where our multi-tensor kernel
    does not run it (fuse=False, float64, under record()) or its lr changes (lifted), was
    recorded as per-weight `sgd_update`, whose arithmetic rounds differently from MXNet's
    multi-weight kernel: results 1 ulp off. Now bit for bit, lifted or not."""
    def prog(w1, g1, w2, g2, wd):
        for lr in (0.5, 0.5, 0.25, 0.125):  # the lr changes: from the third call on, lifted
            nd.multi_sgd_update(w1, g1, w2, g2, out=[w1, w2], lrs=(lr, lr * 3), wds=(wd, wd / 2), num_weights=2)
        return w1, w2
    previous = minpy_jit.config()["fuse"]
    try:
        for fuse in (False, True):
            minpy_jit.config(fuse=fuse)
            for dtype in (np.float32, np.float64):
                args = [nd.array(rand(4, 3, seed=s, dtype=dtype), dtype=dtype) for s in (11, 12)]
                args += [nd.array(rand(5, seed=s, dtype=dtype), dtype=dtype) for s in (13, 14)]
                for wd in (0.01, 0.0):
                    res = run_both(prog, *args, wd)
                    assert_same(res.eager, res.jitted)
    finally:
        minpy_jit.config(fuse=previous)


def test_independent_computations_under_record_are_separate_autograd_nodes():
    """Fuzz seeds 1040, 1087. Under record(), two computations that share no intermediate value
    are separate parts of eager's autograd graph: a backward from one neither touches the
    other's gradient buffers nor clears its history. jit() ran them as one graph (one autograd
    node): the first backward wrote zeros into the other net's gradients, and the second
    backward failed ("not in a computational graph")."""
    from mxnet import gluon

    def prog(x1, x2):
        mx.random.seed(3)
        n1 = gluon.nn.Dense(3, in_units=4)
        n2 = gluon.nn.Dense(2, in_units=4)
        n1.initialize()
        n2.initialize()
        events, seen = [], []
        with autograd.record():
            l2 = n2(x2).sum()
        l2.backward()
        with autograd.record():
            l1 = (n1(x1) * x1[:, :3]).sum()
            l3 = n2(x2).sum() * 3
        caught(events, l1.backward)
        seen.append(n2.weight.grad().copy())  # still l2's gradient in eager MXNet
        caught(events, l3.backward)
        return events, seen, [p.grad() for p in list(n1.collect_params().values()) + list(n2.collect_params().values())]
    res = run_both(prog, nd.array(rand(2, 4, seed=15)), nd.array(rand(2, 4, seed=16)))
    assert res.eager[0] == ["ok", "ok"]
    assert_same(res.eager, res.jitted)
    assert res.stats["independent_parts"] >= 2, res.stats


def test_batchnorm_running_statistics_untouched_by_an_unrelated_backward():
    """Fuzz seed 1040: MXNet's BatchNorm updates its running statistics in its backward, which
    eager runs only if the head depends on it. jit() ran BatchNorm and an unrelated `sin` as
    one graph, so `backward` from the sin's result updated the running mean."""
    from mxnet import gluon

    def prog(x, w):
        grad_leaf(w)
        bn = gluon.nn.BatchNorm(in_channels=2)
        bn.initialize(mx.init.Uniform(0.5))
        with autograd.record():
            y = bn(x)
            s = nd.sin(w)
        s.backward()
        return y, w.grad, [p.data() for p in bn.collect_params().values()]
    res = run_both(prog, nd.array(rand(3, 2, 4, seed=17)), nd.array(rand(5, seed=18)))
    assert_same(res.eager, res.jitted)


def test_nag_mom_update_with_the_weight_as_its_gradient():
    # seed 3512: as_in_context to the array's own context returns the array itself, so the
    # gradient is the weight: MXNet's NAG kernel reads it again after writing the new weight.
    def prog(w, mom, w2, mom2):
        g = w.as_in_context(mx.cpu(0))
        nd.nag_mom_update(w, g, mom, lr=1.0, momentum=0.9, out=w)
        nd.sgd_mom_update(w2, w2, mom2, lr=0.5, momentum=0.9, wd=0.1, out=w2)
        return w, mom, w2, mom2

    args = [nd.array(rand(5, 1, 2, seed=s) * 2) for s in range(4)]
    r = run_both(prog, *args)
    assert_same(*r)
    assert r.stats["fallbacks"].get("nag_mom_update") == 1


def test_copy_into_an_added_gradient_overwrites_it_as_eager():
    # seeds 26713, 33979: astype/copy/copyto/as_in_context are MXNet's _copyto, whose backward
    # (_copyto again, CopyFromToSimple) ignores the request: under grad_req='add' eager's
    # backward overwrites the gradient buffer instead of adding into it. Cast and _copy add.
    def prog(a, b, c):
        grad_leaf(a, "add"), grad_leaf(b, "add"), grad_leaf(c, "add")
        seen = []
        for _ in range(2):
            with autograd.record():
                y16 = a.astype("float16")
                yb = b.copy() * 2          # the copy's gradient is written into b.grad
                yc = c.copy() + c          # two contributions: summed, then added
            y16.backward(retain_graph=True)
            autograd.backward([yb, yc])
            seen += [a.grad.copy(), b.grad.copy(), c.grad.copy()]
        return seen
    r = run_both(prog, *[nd.array(rand(3, 4, seed=s)) for s in (1, 2, 3)])
    assert_same(*r)
    assert r.stats["fallback_reasons"].get(
        "_copyto: its eager backward overwrites a grad_req='add' gradient") == 6


def test_copy_of_an_added_gradient_then_pooling():
    # seed 33979: the copy's history is read again by a later recorded segment
    def prog(x, s):
        grad_leaf(s)
        grad_leaf(x, "add")
        with autograd.record():
            y = x.copy()
        y.backward(retain_graph=True)
        with autograd.record():
            z = nd.sigmoid(s)
            p = nd.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type="max")
        autograd.backward([p, z])
        return x.grad, s.grad, p, z
    assert_same(*run_both(prog, nd.array(rand(2, 3, 4, 4, seed=4)), nd.array(rand(2, seed=5))))


def test_update_of_a_traced_array_with_itself_as_gradient():
    # seed 1433: the weight, the gradient and out= are one array made in the trace (batch_dot's
    # result). The trace runs eagerly (one array as two inputs); the replay wrote batch_dot into
    # a temporary, so the NAG kernel no longer read back its own write (mom 0.0938 vs eager's
    # 0.0916). A second learning rate makes lr a graph input: the update is then recorded as our
    # kernel, which must read back what it stored over its inputs as MXNet's does.
    def program(lr):
        def prog(a, b, mom):
            w = nd.batch_dot(a, b)
            nd.nag_mom_update(w, w, mom, lr=lr, momentum=0.9, wd=0.25, out=w)
            return w, mom
        return prog

    for lr in (0.1, 0.05):
        r = run_both(program(lr), nd.array(rand(2, 1, 4, seed=1) * 2), nd.array(rand(2, 4, 5, seed=2) * 2),
                     nd.array(rand(2, 1, 5, seed=3)))
        assert_same(*r)
        assert r.stats["eager_replays"] == 1


def test_update_of_a_random_draw_with_itself_as_gradient():
    # seed 1152283: as seed 1433, with the weight drawn by a random op in the trace. The trace runs
    # eagerly (one array as two inputs); the draw, kept because it has effects but dead once the
    # update rebinds w, was replayed into a temporary, so the NAG kernel read the old weight back
    # as its gradient (momentum 2.26 vs eager's -3.84).
    def prog(mom):
        w = nd.random.normal(0, 2, shape=(3, 3))
        nd.nag_mom_update(w, w, mom, lr=1.5, momentum=0.9, out=w)
        return w, mom

    r = run_both(prog, nd.array(rand(3, 3, seed=1)), seed=7)
    assert_same(*r)
    assert r.stats["eager_replays"] == 1


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("made_in_trace", [False, True])
def test_nag_mom_update_into_its_own_weight(fuse, made_in_trace):
    # seed 17904: nag_mom_update(w, g, mom, out=w), the usual form, alone in its graph. MXNet's
    # kernel reads the weight back after storing the new one, so eager's momentum uses the new
    # weight (wd * w), and an infinite new weight gives NaN through 0 * inf; MXNet's op in a graph
    # writes a new array and read the old weight (mom -0.05 off with wd=0.3; -inf vs NaN). Our
    # kernel runs it in place; where it cannot (fuse off, a weight made in the trace) the trace
    # runs eagerly.
    def prog(w, g, mom, w_inf, g_inf, mom_inf):
        if made_in_trace:
            w, w_inf = w * 1.0, w_inf * 1.0
        nd.nag_mom_update(w, g, mom, lr=0.1, momentum=0.9, wd=0.3, out=w)
        nd.nag_mom_update(w_inf, g_inf, mom_inf, lr=3.0, momentum=0.9, out=w_inf)
        return w, mom, w_inf, mom_inf

    g_inf = rand(4, 3, seed=5)
    g_inf[0, :2] = np.inf
    args = [nd.array(rand(4, 3, seed=s)) for s in range(3)] + [nd.array(rand(4, 3, seed=4)), nd.array(g_inf),
                                                                 nd.array(rand(4, 3, seed=6))]
    previous = minpy_jit.config()["fuse"]
    minpy_jit.config(fuse=fuse)
    try:
        r = run_both(prog, *args)
    finally:
        minpy_jit.config(fuse=previous)
    assert np.isnan(r.eager[3].asnumpy()[0, :2]).all()
    assert_same(*r)
    if fuse and not made_in_trace:
        assert r.stats["fused_kernels"] >= 1 and r.stats["eager_replays"] == 0


def test_sigmoid_then_batchnorm_gradient_and_adam():
    # seeds 8511, 5437: BatchNorm's beta gradient of (y*y).mean() is a cancelling sum (0 up to
    # rounding), Adam divides it by sqrt(v): so a sigmoid 1 ulp away from eager's gave another
    # weight (0.000185 eager vs 0.0). The sigmoid operator is fused as MXNet's float formula.
    from mxnet import gluon

    def prog(x):
        mx.random.seed(3)
        net = gluon.nn.BatchNorm(in_channels=4)
        net.initialize(mx.init.Uniform(0.5))
        net(nd.zeros((5, 4)))
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
        h = nd.sigmoid(x)
        with autograd.record():
            y = net(h)
            loss = (y * y).mean()
        loss.backward()
        trainer.step(5)
        return h, loss, [p.data() for p in net.collect_params().values()]
    x = nd.array(np.random.RandomState(8511).uniform(-2.0, 2.0, (5, 4)))
    r = run_both(prog, x)
    assert r.stats["fused_kernels"] >= 1


def _grad_through_held_result(x, y):
    # seed 31963: autograd.grad of relu(x) alone, with pow(relu(x), y < 0) held beside it
    x.attach_grad(grad_req="add")
    with autograd.record():
        r = nd.relu(x)
        p = nd.broadcast_power(r, y)
    return autograd.grad(r, [x])[0], r, p


def _backward_from_some_results(x, y):
    # seed 10330: backward([r, s]) with r / 0 = inf held beside them (never a head)
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        r = nd.relu(x)
        s = nd.sigmoid((r + 2.0 + r) * 2.0)
        q = nd.broadcast_div(y, r)
    autograd.backward([r, s])
    return x.grad, y.grad, r, s, q


def _backward_from_the_last_of_several_held(x, y):
    # seed 20015 (run with segment_ops=16): exp(exp(...)) overflows; results of earlier
    # iterations are held when a segment is cut, and only the last one is the head
    x.attach_grad()
    with autograd.record():
        r = nd.relu(x)
        for _ in range(5):
            out = nd.exp(nd.exp(nd.square(nd.abs(nd.sigmoid(r)) * 7.5) + 2.0))
    out.backward()
    return x.grad, out


@pytest.mark.parametrize("prog", [_grad_through_held_result, _backward_from_some_results,
                                  _backward_from_the_last_of_several_held])
def test_backward_from_some_results_skips_the_others(prog):
    # A recorded segment ran as one graph: a backward from some of its results ran the backward
    # of all of it with zero head gradients for the others, and 0 * inf gave NaN in gradients
    # eager never computes that way (eager 0 or inf, jit NaN). A held result read by later ops
    # of the segment now ends a part (parts.cc), as it is a node boundary in eager's graph.
    x = rand(2, 3, seed=11) * 2
    y = -np.abs(rand(1, 3, seed=12)) - 0.5
    previous = minpy_jit.config()["segment_ops"]
    minpy_jit.config(segment_ops=16)
    try:
        r = run_both(prog, nd.array(x), nd.array(y))
    finally:
        minpy_jit.config(segment_ops=previous)
    assert_same(*r)


def test_held_result_on_the_path_of_the_backward_keeps_one_graph():
    # The cut above is not needed when the backward MXNet runs right away names its heads and
    # every op leads to one: then it visits them all with real gradients (W3's NDArray step
    # with backward_in_graph=False: h held, the loss read from it; one graph, not two).
    def prog(x, w):
        x.attach_grad()
        with autograd.record():
            h = nd.relu(nd.dot(x, w))
            loss = nd.mean(-nd.log_softmax(h))
        loss.backward()
        return x.grad, h, loss

    previous = minpy_jit.config()["backward_in_graph"]
    minpy_jit.config(backward_in_graph=False)
    try:
        r = run_both(prog, nd.array(rand(4, 3, seed=1)), nd.array(rand(3, 5, seed=2)))
    finally:
        minpy_jit.config(backward_in_graph=previous)
    assert_same(*r)
    assert r.stats["independent_parts"] == 0 and r.stats["backward_by_mxnet"] == 1, r.stats


@pytest.mark.parametrize("weight", ["external", "made_in_the_trace"])
@pytest.mark.parametrize("lrs", [(0.1, 0.1), (0.25, 0.5)], ids=["same_lr", "lr_changes"])
def test_two_momentum_updates_of_one_state_in_one_graph(weight, lrs):
    """Fuzz seeds 179, 544, 3432, 40111 hung. Two of our multi-tensor updates mutating one
    momentum array in one graph made the engine op that first puts arrays back into the default
    layout list that array twice: an engine op that lists a variable twice waits for itself.
    The program runs in a daemon thread, so that a hang fails the test instead of the run."""
    import threading

    def prog(w, g, m):
        for lr in lrs:
            target = w * w if weight == "made_in_the_trace" else w
            nd.multi_sgd_mom_update(target, g, m, out=[target], lrs=(lr,), wds=(0.0,), momentum=0.9,
                                    num_weights=1)
        return target, m

    result = {}

    def run():
        both = run_both(prog, nd.array([0.5, -1.0]), nd.array([0.1, 0.3]), nd.array([0.25, 0.0]))
        for a in both[1]:
            a.wait_to_read()  # the hang was here
        result["both"] = both

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "the jitted program hung"
    eager, jitted = result["both"]
    assert_same(eager, jitted)


def test_held_result_of_an_array_that_joined_the_graph_keeps_its_history():
    # seed 610322: under record(), `dot(c, x)` (x a variable) puts the plain array c into the
    # autograd graph, so `b = BlockGrad(c)` is recorded too, outside the loss's graph. Eager's
    # backward clears only what the loss reaches: b keeps its history, and an update of c that
    # reads b under record() is recorded and refused (in place). jit() ran the backward inside
    # its graph, which leaves b no history, and the update ran (c 0.404 vs 0.4495, no error).
    def prog(c, x, m, g):
        x.attach_grad()
        events = []
        with autograd.record():
            y = nd.sum(nd.dot(c, x))
            b = nd.BlockGrad(c)
        y.backward()
        with autograd.record():
            caught(events, nd.multi_sgd_update, c, b, m, g, out=[c, m], lrs=(0.1, 0.1), wds=(0.01, 0.01),
                   num_weights=2)
        return events, c, m, x.grad, b

    r = run_both(prog, nd.array([[0.5]]), nd.array(rand(1, 3, seed=1)), nd.ones((5, 3)), nd.ones((5, 3)))
    assert r.eager[0] == ["MXNetError"]
    assert_same(*r)


@pytest.mark.parametrize("fuse", [True, False])
def test_failed_call_before_a_recorded_segment_keeps_the_add_gradient(fuse):
    # seed 1608827: `dot(a8, a14)` outside record() failed its shape check (OpInputError: no node
    # recorded) after registering a8 in the empty trace, not recording; the next segment, recorded,
    # began with a8 already there, so its grad_req='add' was never read (Value::adds_gradient, a bit
    # of the trace key): tanh's fused backward overwrote a8.grad instead of adding to it (0.14
    # where eager has 0.28 after two backward passes).
    def prog(x, w):
        grad_leaf(x, "add")
        x.grad[:] = 1.0
        events = []
        for _ in range(2):
            caught(events, nd.dot, x, w)  # (4, 1) x (2, 2): refused
            with autograd.record():
                y = nd.tanh(x) * 2.0
            y.backward()
        return events, x.grad

    old = minpy_jit.config()["fuse"]
    minpy_jit.config(fuse=fuse)
    try:
        r = run_both(prog, nd.array(rand(4, 1, seed=3)), nd.ones((2, 2)))
    finally:
        minpy_jit.config(fuse=old)
    assert r.eager[0] == ["MXNetError", "MXNetError"]
    assert_same(*r)


def _read(a):
    """An array's values, or the type of the error its read raised (a run-time failure it holds)."""
    try:
        return a.asnumpy().tolist()
    except Exception as e:  # noqa: BLE001 - the type is the observation
        return type(e).__name__


def _drain():
    """Raises and drops the run-time errors MXNet's engine still holds (a later waitall, in
    another test, would raise them)."""
    for _ in range(10):
        try:
            nd.waitall()
            return
        except mx.base.MXNetError:
            pass


def _failing_tile(x):
    """A tile that passes inference and fails while it runs (MXNet: 'Too many reduction axes')."""
    return nd.tile(nd.swapaxes(x, dim1=3, dim2=1), reps=(2, 2, 1, 2))


@pytest.mark.parametrize("fuse", [True, False])
def test_update_after_a_failing_tile_leaves_the_error_where_mxnet_does(fuse, isolated_runtime):
    """Fuzz seed 9032816. A multi_sgd_update reading a failed tile's result, then a random draw and
    a product of the updated weight: eagerly the update is skipped, the draw is made and the
    product raises the tile's error. Under jit() the draw raised it and the product read garbage:
    our update kernel (a library op holding a temp-space resource) passed the error to that
    resource, the draw's, and the read of the draw cleared it. Now MXNet's update runs there."""
    minpy_jit.config(fuse=fuse)
    r = np.random.RandomState(0)
    arrays = [r.uniform(-2, 2, s).astype(np.float32) for s in [(2, 3, 3, 2), (4, 4, 3, 6), (5, 1), (5, 1)]]

    def prog(use_jit):
        mx.random.seed(1)
        a10, g1, w2, g2 = (nd.array(a) for a in arrays)
        with jit_or_eager(use_jit):
            bad = _failing_tile(a10)
            nd.multi_sgd_update(bad, g1, w2, g2, out=[bad, w2], lrs=(0.5, 0.5), wds=(0.0, 0.0), num_weights=2)
            u = nd.random.uniform(-1, 1, shape=(2, 4))
            v = w2 * 3
        seen = [_read(u), _read(v), _read(w2)]  # (bad, whose error v raised, now reads garbage)
        _drain()
        return seen
    want, got = prog(False), prog(True)
    assert want[1] == "MXNetError" and isinstance(want[0], list)
    assert got == want


def test_forward_beside_a_backward_into_a_failed_gradient_is_computed(isolated_runtime):
    """Fuzz seed 9062593. A tile's backward fails and leaves its error on the variable's gradient
    buffer (behind a Pooling in another part of the trace); then sigmoid of the variable and its
    backward(), and a read of the gradient raises and clears the error. Eagerly the sigmoid is
    computed; under jit() the sigmoid and its backward were one graph, skipped whole because it
    writes that buffer, and the sigmoid read garbage. The buffers the failing backward reached
    are now probed, so that graph runs op by op."""
    r = np.random.RandomState(9062593)
    x0 = r.uniform(-2, 2, (2, 1, 5, 6)).astype(np.float32)

    def prog(use_jit):
        x = nd.array(x0)
        x.attach_grad()
        with jit_or_eager(use_jit):
            with autograd.record():
                y = nd.tile(nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max"), reps=(2, 2, 1, 2))
            y.backward()
            with autograd.record():
                s = nd.sigmoid(x)
            s.backward()
            inside = _read(x.grad)
        seen = [inside, _read(x.grad), _read(s)]
        _drain()
        return seen
    want, got = prog(False), prog(True)
    assert want[0] == "MXNetError" and isinstance(want[2], list)
    assert got == want


@pytest.mark.parametrize("max_ops", [7, 10000])
def test_multi_weight_update_given_one_array_twice_reads_what_earlier_weights_wrote(max_ops, isolated_runtime):
    # fuzz seed 9835811: weight 0 is also the gradient of both weights. MXNet's kernel updates
    # weight 0 at an element before weight 1 reads its gradient there; the per-weight expansion
    # (lrs lifted: they change every iteration) read the call's inputs as they were.
    def run(use_jit):
        r = np.random.RandomState(9835811)
        a3 = nd.array(r.uniform(-2, 2, (5,)), dtype="float32")
        a5 = nd.array(r.uniform(-2, 2, (1,)), dtype="float32")
        w1 = nd.array(r.uniform(-2, 2, (5,)), dtype="float32")
        m0 = nd.array(r.uniform(0, 0.5, (5,)), dtype="float32")
        m1 = nd.array(r.uniform(0, 0.5, (5,)), dtype="float32")
        with jit_or_eager(use_jit):
            w0 = a5 * a3
            for lr in (0.1, 0.3, 2.7, 1.1, 0.7):
                nd.multi_sgd_mom_update(w0, w0, m0, w1, w0, m1, out=[w0, w1], lrs=(lr, lr), wds=(0.0, 0.0),
                                        momentum=0.9, num_weights=2)
                nd.argsort(w1, axis=0)
        return [a.asnumpy() for a in (w0, w1, m0, m1)]

    minpy_jit.config(fuse=False, max_ops=max_ops, recompile_limit=10 ** 9)
    eager, jitted = run(False), run(True)
    for e, j in zip(eager, jitted):
        assert np.array_equal(e.view(np.uint32), j.view(np.uint32))


def test_write_into_a_slice_of_a_concat_result_fails_as_eagerly(isolated_runtime):
    # fuzz seed 10376385: a 4-d concat's result is left in oneDNN's layout; an elemwise_add into
    # a slice of it (out=) fails while it runs eagerly ("Check failed: !is_view"), leaving the
    # slice as it was; our graph ran the add. Writes into a view run as MXNet's op now.
    def run(use_jit):
        r = np.random.RandomState(10376385)
        a16 = nd.array(r.uniform(0.0, 0.5, (5, 5, 3, 1)), dtype="float32")
        a25 = nd.array(r.uniform(-2.0, 2.0, (1, 5, 3, 3)), dtype="float32")
        seen = []
        try:
            with jit_or_eager(use_jit):
                a24 = nd.elemwise_add(a16[2:3], a16[2:3])
                a26 = nd.concat(a24, a25, dim=3)
                a28 = a26[:, 2:5]
                nd.elemwise_add(a28, a28, out=a28)
        except mx.MXNetError as e:
            seen.append(("scope raised", type(e).__name__))
        for a in (a28, a26):
            try:
                seen.append(a.asnumpy())
            except mx.MXNetError as e:
                seen.append(("raised", type(e).__name__))
        return seen

    minpy_jit.config(recompile_limit=10 ** 9)
    eager, jitted = run(False), run(True)
    assert len(eager) == len(jitted)
    for e, j in zip(eager, jitted):
        if isinstance(e, tuple) or isinstance(j, tuple):
            assert e == j
        else:
            assert np.array_equal(e.view(np.uint32), j.view(np.uint32))


@pytest.mark.parametrize("second", ["minimum", "product"])
def test_failed_autograd_grad_leaves_the_history_a_later_backward_uses(second, isolated_runtime):
    # fuzz seed 10523464: autograd.grad(a13, [a12]) with a12 unreachable from a13 fails in MXNet
    # ("Cannot differentiate with respect to the 1-th variable") and leaves the recorded graph in
    # place; a later backward through the held a11 = tanh(a3) reaches a3 eagerly. The flush
    # before the grad counted on it freeing that history (no retain_graph) and returned a11
    # through BlockGrad: a3's gradient was 0. A backward given variables counts as retaining now.
    def run(use_jit):
        a3 = nd.array(rand(2, 3, seed=1))
        a3.attach_grad()
        a12 = nd.array(rand(2, 3, seed=2))
        a12.attach_grad()
        seen = []
        with jit_or_eager(use_jit):
            with autograd.record(train_mode=False):
                a11 = nd.tanh(a3)
                a13 = nd.minimum(a11, a11) if second == "minimum" else a11 * 1
            try:
                autograd.grad(a13, [a12])
            except mx.MXNetError as e:
                seen.append(("raised", type(e).__name__))
            with autograd.record():
                a18 = (a11 * 2).sum()
            a18.backward()
        return seen + [a3.grad, a12.grad, a11, a18]

    eager, jitted = run(False), run(True)
    assert eager[0] == ("raised", "MXNetError")
    assert_same(eager, jitted)


def test_a_kernel_check_after_a_failed_op_leaves_its_error_to_the_program(isolated_runtime):
    """Fuzz seed 12113657. A float16 argsort fails while it runs (MXNet: 'This operation does not
    support float16'); then a FullyConnected of a new shape, whose graph asks our FC kernel's
    check (MXNet's FullyConnected on random draws, read back). The failure's error reached the
    check's arrays through MXNet's shared temp workspace, and the check's read cleared it for
    every array holding it: argsort's result then read as zeros where eagerly it raises. While
    errors may be pending, checks wait (kernel_check.h, checks_deferred)."""
    r = np.random.RandomState(12113657)
    x0, w0, b0 = r.uniform(-2, 2, (17, 3)), r.uniform(-2, 2, (6, 3)), r.uniform(-2, 2, (6,))
    w1, b1 = r.uniform(-1, 1, (5, 6)), np.zeros(5)

    def prog(use_jit):
        x, w, b, v, c = (nd.array(a) for a in (x0, w0, b0, w1, b1))
        h = nd.array([[0.5, -1.25]], dtype="float16")
        with jit_or_eager(use_jit):
            nd.clip(x, -1.0, 1.0)  # a trace before the recorded one
            with autograd.record():
                y = nd.FullyConnected(x, w, b, num_hidden=6)
                order = nd.argsort(h, axis=1)  # fails while it runs
            z = nd.FullyConnected(y, v, c, num_hidden=5)  # not recorded: our kernel, once checked
        seen = [_read(order), _read(z)]
        _drain()
        return seen
    want, got = prog(False), prog(True)
    assert want[0] == "MXNetError" and isinstance(want[1], list)
    assert got == want
