"""FullyConnected in our kernels on both cores (cpp/src/exact_fc.h, cpp/kernels/fc_op.cc).

Graphs MXNet's autograd does not record (no record(), or a step whose backward() is in the
graph) run FullyConnected as _minpy_fc where its bit check passed for the shape. Every test
compares with eager MXNet bit for bit (values, gradients, updated weights); whether a shape
was taken over follows `_core.fc_kernel_blocks`, the check the lowering itself makes, and is
asserted from graphs() so that a test of the op cannot pass with the op silently unused.
"""
import gc
import json

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import minpy_jit
from minpy_jit import _core
from conftest import assert_same, rand, run_both, train_steps

pytestmark = pytest.mark.usefixtures("whole_traces", "isolated_runtime")


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test looks at the graphs it compiled. Garbage is collected first: an array an earlier
    test's failing op reached (a suspect, failures.h) and a reference cycle keeps alive defers the
    kernels' checks until it is freed, so whether a graph takes our product could depend on when
    Python's collector runs (the likely cause of one failure seen in a full run: a graph without
    `_minpy_fc`, the check then passing when the test asked it)."""
    gc.collect()
    minpy_jit.clear_cache()


def fc_kernels_in_graphs():
    """The most FullyConnected calls our kernels run in one compiled graph."""
    return max((g["fc_kernels"] for g in minpy_jit.graphs()), default=0)


def exact(rows, inputs, outputs, bias=True, training=False, backward=False):
    """Whether the lowering takes the shape over: large enough, and the bit check passes
    (forward-only graphs check the forward alone)."""
    work = rows * inputs * outputs
    if _core.fc_kernel_serial_multiply_adds() <= work < _core.fc_kernel_min_multiply_adds:
        return False
    return _core.fc_kernel_blocks(rows, inputs, outputs, bias, training, backward) is not None


def wide(*shape, seed=0):
    """Values of many magnitudes and both signs: a sum in another order differs in its last bits."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, shape) * 2.0 ** rng.integers(-4, 5, shape)).astype(np.float32)


# (rows, inputs, outputs): W3's first two layers, edges of the tiles (rows and outputs not
# multiples of the vector width), W4's batched input projections (a forward that agrees, a
# weight gradient no block length reproduces), a product in the size band left to MXNet (W4's
# recurrent one), small products run on one thread (W3's last layer), and shapes oneDNN sums some other way (the check refuses them). Wherever
# MXNet's operator stays, the values equal eager's all the same.
SHAPES = [(64, 784, 256), (64, 256, 256), (67, 250, 251), (200, 97, 300), (800, 64, 512), (16, 128, 512),
          (64, 256, 10), (5, 33, 7), (37, 500, 250), (64, 2000, 300)]
TAKEN_WITH_GRADIENTS = [(64, 784, 256), (64, 256, 256), (67, 250, 251), (200, 97, 300)]


@pytest.mark.parametrize("rows,inputs,outputs", SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_forward_equals_eager(rows, inputs, outputs, bias):
    x, w, b = nd.array(wide(rows, inputs, seed=1)), nd.array(wide(outputs, inputs, seed=2)), nd.array(wide(outputs, seed=3))

    def fn(x, w, b):
        y = nd.FullyConnected(x, w, b if bias else None, num_hidden=outputs, no_bias=not bias)
        return nd.relu(y) * 2

    assert_same(*run_both(fn, x, w, b))
    taken = exact(rows, inputs, outputs, bias)
    assert fc_kernels_in_graphs() == (1 if taken else 0)
    ir = minpy_jit.graphs()[-1]["ir"]  # the printout names the op the graph runs
    assert ("= _minpy_fc(" in ir) == taken and ("= FullyConnected(" in ir) == (not taken), ir


@pytest.mark.parametrize("rows,inputs,outputs", TAKEN_WITH_GRADIENTS + [(16, 128, 512), (37, 500, 250), (64, 256, 10), (5, 33, 7)])
def test_in_graph_backward_equals_eager(rows, inputs, outputs):
    """record(), backward() and reading the gradients in one jit() scope: one graph with the
    forward, MXNet's gradient pass over it (our op's backward node) and the gradient reads.
    The data takes a gradient too, so all three backward products run."""
    x, w, b = nd.array(wide(rows, inputs, seed=4)), nd.array(wide(outputs, inputs, seed=5)), nd.array(wide(outputs, seed=6))
    head = nd.array(wide(rows, outputs, seed=7))

    def fn(x, w, b, head):
        for a in (x, w, b):
            a.attach_grad()
        with autograd.record():
            y = nd.FullyConnected(x, w, b, num_hidden=outputs)
            z = nd.tanh(y)
        z.backward(head)
        return z, x.grad, w.grad, b.grad

    assert_same(*run_both(fn, x, w, b, head))
    assert fc_kernels_in_graphs() == (1 if exact(rows, inputs, outputs, training=True, backward=True) else 0)


def test_weight_read_twice_sums_both_gradients():
    """A weight used by two projections: the graph sums its two gradients (the gradient pass's
    own sum node), as eager's autograd does."""
    w, b = nd.array(wide(170, 200, seed=8)), nd.array(wide(170, seed=9))
    x1, x2 = nd.array(wide(130, 200, seed=10)), nd.array(wide(130, 200, seed=11))

    def fn(w, b, x1, x2):
        w.attach_grad()
        b.attach_grad()
        with autograd.record():
            loss = (nd.FullyConnected(x1, w, b, num_hidden=170) * nd.FullyConnected(x2, w, b, num_hidden=170)).sum()
        loss.backward()
        return loss, w.grad, b.grad

    assert_same(*run_both(fn, w, b, x1, x2))
    assert fc_kernels_in_graphs() == (2 if exact(130, 200, 170, training=True, backward=True) else 0)


def mlp(seed):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(256, in_units=784, activation="relu"), nn.Dense(256, in_units=256, activation="relu"),
            nn.Dense(10, in_units=256))
    net.initialize(mx.init.Xavier())
    return net


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_w3_training_steps_equal_eager(optimizer):
    """W3's step (Gluon, Trainer) for 8 steps: losses and weights equal eager's bit for bit; each
    step is one graph whose layers large enough, forward and backward, run in our kernels."""
    x, y = nd.array(wide(64, 784, seed=12)), nd.array(np.arange(64) % 10)

    def train(x, y):
        net = mlp(3)
        return train_steps(net, gluon.Trainer(net.collect_params(), optimizer, {"learning_rate": 0.01}), x, y, 8)

    assert_same(*run_both(train, x, y))
    # Dense(activation='relu'): the two large layers apply their relu; the last layer, small
    # enough for one thread, is ours too (no activation); the gradient nodes are
    # _minpy_fc_grad, not behind BlockGrad
    layers = [(64, 784, 256), (64, 256, 256), (64, 256, 10)]
    taken = [exact(*s, training=True, backward=True) for s in layers]
    relu = _core.relu_epilogue_exact(64, 256, training=True)
    for g in minpy_jit.graphs():
        nodes = json.loads(g["json"])["nodes"]
        if not any(n["op"] in ("_minpy_fc", "FullyConnected") for n in nodes):
            continue  # the Trainer's setup
        assert [n["attrs"].get("act") for n in nodes if n["op"] == "_minpy_fc"] == \
            [("relu" if relu and k < 2 else None) for k, t in enumerate(taken) if t]
        assert sum(n["op"] == "_minpy_fc_grad" for n in nodes) == sum(taken)
    assert not blocked_fc_gradients()
    assert fc_kernels_in_graphs() == sum(exact(*s, training=True, backward=True) for s in layers)


def test_recorded_graph_keeps_mxnets_operator():
    """backward() outside the jit() scope: the scope's graph is recorded by MXNet's autograd,
    whose gradient may add into a variable's buffer (grad_req='add'); our op writes its
    gradients, so such graphs keep FullyConnected. Gradients accumulate as eager's."""
    x, w, b = nd.array(wide(100, 300, seed=13)), nd.array(wide(150, 300, seed=14)), nd.array(wide(150, seed=15))

    def fn(x, w, b):
        w.attach_grad(grad_req="add")
        b.attach_grad()
        for _ in range(2):
            with minpy_jit.jit():
                with autograd.record():
                    z = nd.FullyConnected(x, w, b, num_hidden=150).sum()
            z.backward()
        return w.grad, b.grad

    e = fn(x.copy(), w.copy(), b.copy())
    j = fn(x.copy(), w.copy(), b.copy())
    assert_same(e, j)
    assert fc_kernels_in_graphs() == 0


def test_specials_propagate_as_eager():
    """Infinities and NaNs in the data: the same outputs as eager, NaN for NaN."""
    xv = wide(100, 300, seed=16)
    xv[0, 3], xv[1, 5], xv[2, :] = np.inf, np.nan, -np.inf
    x, w, b = nd.array(xv), nd.array(wide(150, 300, seed=17)), nd.array(wide(150, seed=18))

    def fn(x, w, b):
        return nd.FullyConnected(x, w, b, num_hidden=150)

    assert_same(*run_both(fn, x, w, b))
    assert fc_kernels_in_graphs() == (1 if exact(100, 300, 150) else 0)


def test_switched_off_gives_mxnets_operator():
    """config(fc_kernels=False) empties the cache and builds graphs with FullyConnected."""
    x, w, b = nd.array(wide(64, 256, seed=19)), nd.array(wide(256, 256, seed=20)), nd.array(wide(256, seed=21))

    def fn(x, w, b):
        return nd.FullyConnected(x, w, b, num_hidden=256)

    try:
        minpy_jit.config(fc_kernels=False)
        assert_same(*run_both(fn, x, w, b))
        assert fc_kernels_in_graphs() == 0
    finally:
        minpy_jit.config(fc_kernels=True)
    assert minpy_jit.config()["fc_kernels"] is True



def kernel_library():
    import ctypes
    lib = ctypes.CDLL(minpy_jit.kernels())  # the library MXNet loaded: dlopen returns it
    P, I = ctypes.c_void_p, ctypes.c_int64
    lib.minpy_fc_forward.argtypes = [P, P, P, P, I, I, I, I]
    lib.minpy_fc_backward.argtypes = [P, P, P, P, P, P, I, I, I, I, I]
    lib.minpy_gemm_force_isa.argtypes = [ctypes.c_int]
    return lib


@pytest.mark.parametrize("rows,inputs,outputs", [(64, 784, 256), (67, 250, 251)])
def test_avx2_tiles_give_the_same_bits(rows, inputs, outputs):
    """The AVX2 tiles (what an AVX2-only machine runs; here forced) against the tiles this CPU
    picks and against eager MXNet's FullyConnected, forward and backward, with the block lengths
    the check found."""
    lib = kernel_library()
    blocks = _core.fc_kernel_blocks(rows, inputs, outputs, True, True, True)
    kc, kc_data, kc_weight = blocks if blocks is not None else (384, 0, 0)
    X, W, B = wide(rows, inputs, seed=30), wide(outputs, inputs, seed=31), wide(outputs, seed=32)
    dY = wide(rows, outputs, seed=33)

    def ours(isa):
        lib.minpy_gemm_force_isa(isa)
        try:
            Y, dX = np.empty((rows, outputs), np.float32), np.empty((rows, inputs), np.float32)
            dW, dB = np.empty((outputs, inputs), np.float32), np.empty(outputs, np.float32)
            ptr = lambda a: a.ctypes.data
            lib.minpy_fc_forward(ptr(X), ptr(W), ptr(B), ptr(Y), rows, inputs, outputs, kc)
            lib.minpy_fc_backward(ptr(dY), ptr(X), ptr(W), ptr(dX), ptr(dW), ptr(dB), rows, inputs, outputs,
                                  kc_data, kc_weight)
            return Y, dX, dW, dB
        finally:
            lib.minpy_gemm_force_isa(0)

    avx2, native = ours(1), ours(0)
    for a, n in zip(avx2, native):
        np.testing.assert_array_equal(a.view(np.int32), n.view(np.int32))
    if blocks is None:  # oneDNN sums this shape some other way here: MXNet's operator stays
        return
    x, w, b = nd.array(X), nd.array(W), nd.array(B)
    for a in (x, w, b):
        a.attach_grad()
    with autograd.record():
        y = nd.FullyConnected(x, w, b, num_hidden=outputs)
    y.backward(nd.array(dY))
    for got, want in zip(avx2, (y, x.grad, w.grad, b.grad)):
        np.testing.assert_array_equal(got.view(np.int32), want.asnumpy().view(np.int32))


@pytest.mark.parametrize("case", range(8))
def test_random_gradient_requests_equal_eager(case):
    """Two layers of W3's second shape under record(), backward() in the scope: which of the
    data, weights and biases take gradients (and with which request) is drawn at random, so
    the op's backward skips different products (gradient_reach); every gradient and the
    loss equal eager's."""
    rng = np.random.default_rng(100 + case)
    arrays = {"x": wide(64, 256, seed=40 + case), "w1": wide(256, 256, seed=50 + case), "b1": wide(256, seed=60 + case),
              "w2": wide(256, 256, seed=70 + case), "b2": wide(256, seed=80 + case)}
    wants = {k: bool(rng.integers(2)) for k in arrays}
    wants["w2"] = True  # at least one variable
    middle_grad = bool(rng.integers(2))  # the hidden layer's output marked as a variable too

    def fn(**arrs):
        for k, a in arrs.items():
            if wants[k]:
                a.attach_grad()
        with autograd.record():
            h = nd.FullyConnected(arrs["x"], arrs["w1"], arrs["b1"], num_hidden=256)
            if middle_grad:
                h = h.detach()
                h.attach_grad()
            y = nd.FullyConnected(nd.relu(h), arrs["w2"], arrs["b2"], num_hidden=256)
            loss = (y * y).mean()
        loss.backward()
        grads = {k: a.grad for k, a in arrs.items() if wants[k]}
        if middle_grad:
            grads["h"] = h.grad
        return loss, grads

    nd_arrays = {k: nd.array(v) for k, v in arrays.items()}
    e = fn(**{k: v.copy() for k, v in nd_arrays.items()})
    with minpy_jit.jit():
        j = fn(**{k: v.copy() for k, v in nd_arrays.items()})
    assert_same(e, j)
    # attach_grad on the hidden layer's output flushes the first layer (a recorded graph: MXNet's
    # operator); the second joins the backward's graph
    taken = 1 if middle_grad else 2
    assert fc_kernels_in_graphs() == (taken if exact(64, 256, 256, training=True, backward=True) else 0)


# ------------------------------------------------------------------ the relu after the product

def graph_json_nodes():
    """The operator nodes of every compiled graph, as MXNet was given them."""
    return [n for g in minpy_jit.graphs() for n in json.loads(g["json"])["nodes"] if n["op"] != "null"]


def blocked_fc_gradients():
    """BlockGrad nodes reading a _minpy_fc_grad node, in every compiled graph."""
    found = []
    for g in minpy_jit.graphs():
        nodes = json.loads(g["json"])["nodes"]
        found += [n for n in nodes if n["op"] == "BlockGrad" and nodes[n["inputs"][0][0]]["op"] == "_minpy_fc_grad"]
    return found


def specials_data(rows, inputs, outputs, seed):
    """Data, weight and bias giving products with infinities, NaNs and whole columns below
    zero (the relu masks every row of them, so their bias gradients are sums of zeros whose
    signs show how the masking was done)."""
    xv, wv, bv = wide(rows, inputs, seed=seed), wide(outputs, inputs, seed=seed + 1), wide(outputs, seed=seed + 2)
    xv[0, 1], xv[1, 2], xv[3, :] = np.inf, np.nan, -np.inf
    bv[5::7] = -1e30  # far below any product: these columns are negative in every row
    return nd.array(xv), nd.array(wv), nd.array(bv)


@pytest.mark.parametrize("rows,inputs,outputs", TAKEN_WITH_GRADIENTS)
def test_relu_reading_the_product_runs_in_the_op(rows, inputs, outputs):
    """Activation(relu) of a FullyConnected (Gluon's Dense(activation='relu')) under record(),
    backward() in the scope: the op applies the relu and, in the backward, its gradient (act=relu);
    MXNet's gradient pass's node for the op is _minpy_fc_grad, read without BlockGrad. Products
    and head gradients with infinities, NaNs and signed zeros: every bit as eager's."""
    x, w, b = specials_data(rows, inputs, outputs, seed=90)
    hv = wide(rows, outputs, seed=93)
    hv[::3, ::5] *= -1e-30  # tiny negative gradients where the relu is zero: -0 after masking
    hv[2, 3], hv[4, :2] = np.nan, np.inf
    head = nd.array(hv)

    def fn(x, w, b, head):
        for a in (x, w, b):
            a.attach_grad()
        with autograd.record():
            z = nd.Activation(nd.FullyConnected(x, w, b, num_hidden=outputs), act_type="relu")
            loss = (z * head).sum()
        loss.backward()
        return z, x.grad, w.grad, b.grad

    assert_same(*run_both(fn, x, w, b, head))
    taken = exact(rows, inputs, outputs, training=True, backward=True)
    relu = taken and _core.relu_epilogue_exact(rows, outputs, training=True)
    nodes = graph_json_nodes()
    fc = [n for n in nodes if n["op"] == "_minpy_fc"]
    assert len(fc) == (1 if taken else 0)
    assert [n["attrs"].get("act") for n in fc] == (["relu"] if relu else [None] * len(fc))
    assert sum(n["op"] == "Activation" for n in nodes) == (0 if relu else 1)
    assert sum(n["op"] == "_minpy_fc_grad" for n in nodes) == len(fc)
    assert not blocked_fc_gradients()


@pytest.mark.parametrize("training", [False, True])
def test_relu_in_forward_only_graph(training):
    """No backward in the graph: the relu is applied in the op all the same (checked with the
    graph's training flag, which oneDNN's forward follows). (Where elementwise ops follow it,
    the relu joins their fused kernel instead.)"""
    x, w, b = specials_data(64, 256, 256, seed=95)

    def fn(x, w, b):
        with autograd.train_mode() if training else autograd.predict_mode():
            return nd.Activation(nd.FullyConnected(x, w, b, num_hidden=256), act_type="relu")

    assert_same(*run_both(fn, x, w, b))
    relu = exact(64, 256, 256, training=training) and _core.relu_epilogue_exact(64, 256, training=training)
    assert [n["attrs"].get("act") for n in graph_json_nodes() if n["op"] == "_minpy_fc"] == (["relu"] if relu else [None])


def test_relu_not_applied_where_the_product_is_read_elsewhere():
    """The product is also returned (or read by another op): it must exist, so the Activation
    is computed apart (here, in the elementwise kernel); nd.relu (a different operator, which
    keeps NaNs) is never folded in; nor is an Activation writing into an existing array (out=)."""
    x, w, b = specials_data(64, 256, 256, seed=97)

    def fn(x, w, b):
        y = nd.FullyConnected(x, w, b, num_hidden=256)
        y2 = nd.FullyConnected(x, w, None, num_hidden=256, no_bias=True)
        z = nd.zeros((64, 256))
        nd.Activation(nd.FullyConnected(x, w * 2, b, num_hidden=256), act_type="relu", out=z)  # into an array
        z2 = nd.zeros((64, 256))
        nd.FullyConnected(x, w * 3, b, num_hidden=256, out=z2)  # our op writing into an existing array
        return y, nd.Activation(y, act_type="relu"), nd.relu(y2), z, z2

    assert_same(*run_both(fn, x, w, b))
    nodes = graph_json_nodes()
    assert all("act" not in n["attrs"] for n in nodes if n["op"] == "_minpy_fc")
    assert sum(n["op"] == "_minpy_fc" for n in nodes) == 3 * exact(64, 256, 256) + exact(64, 256, 256, bias=False)


def test_bias_gradient_of_cancelling_sums_equals_mxnets():
    """The bias gradient sums a head gradient over rows; where the rows cancel (a softmax's or a
    mean's backward), the sign and last bits of the near-zero sum show the order of the sum. Our
    kernel's (rows in order from zero) against MXNet's backward on 300 such draws, small shapes
    as the fuzzer makes them (a relu of the bias turns that sign into the sign of a zero), on
    every shape whose bit check (random wide draws, not cancelling ones) passes: the graphs'
    premise. A shape the check refuses runs MXNet's operator and is not compared."""
    import ctypes
    lib = kernel_library()
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    rng = np.random.default_rng(7)
    for trial in range(300):
        M, K, N = (16, 5, 1 + trial % 3) if trial % 3 else (64, 7, 10)
        if _core.fc_kernel_blocks(M, K, N, True, training=False, backward=True) != (0, 0, 0):
            continue  # refused, or blocked sums: not this test's case
        X, W, B = (rng.uniform(-2, 2, s).astype(np.float32) for s in ((M, K), (N, K), (N,)))
        v = rng.uniform(-2, 2, (M, N)).astype(np.float32)
        soft = np.exp(v - v.max(0))
        soft = (soft / soft.sum(0)).astype(np.float32)
        dY = (1 - soft * M).astype(np.float32) if trial % 2 else (v - v.mean(0)).astype(np.float32)
        x, w, b = nd.array(X), nd.array(W), nd.array(B)
        for a in (x, w, b):
            a.attach_grad()
        with autograd.record(train_mode=False):
            y = nd.FullyConnected(x, w, b, num_hidden=N)
        y.backward(nd.array(dY), train_mode=False)
        dB, dW, dX = np.zeros(N, np.float32), np.zeros((N, K), np.float32), np.zeros((M, K), np.float32)
        lib.minpy_fc_backward(ptr(dY), ptr(X), ptr(W), ptr(dX), ptr(dW), ptr(dB), M, K, N, 0, 0)
        np.testing.assert_array_equal(dB.view(np.int32), b.grad.asnumpy().view(np.int32), err_msg=str((trial, M, N)))


def test_a_functions_graph_runs_the_band_on_our_kernels():
    """W4's recurrent product, (16, 128) by (512, 128), is in the band left to MXNet under jit(),
    where Python records the next segment beside the graph; a @minpy_jit.function's graph runs
    with Python waiting in its replay, and takes it (exact_fc.cc). Eager's bits either way."""
    rows, inputs, outputs = 16, 128, 512
    work = rows * inputs * outputs
    in_band = _core.fc_kernel_serial_multiply_adds() <= work < _core.fc_kernel_min_multiply_adds
    checked = _core.fc_kernel_blocks(rows, inputs, outputs, True, False, False) is not None
    x, w, b = nd.array(wide(rows, inputs, seed=1)), nd.array(wide(outputs, inputs, seed=2)), nd.array(wide(outputs, seed=3))

    def step(x, w, b):
        return nd.relu(nd.FullyConnected(x, w, b, num_hidden=outputs)) * 2

    expected = step(x, w, b)
    decorated = minpy_jit.function(step)
    for _ in range(3):  # captured, then replayed
        assert_same(expected, decorated(x, w, b))
    [graph] = [g for g in minpy_jit.graphs() if "fragment" in g["site"]]  # (the capture ran under jit())
    assert ("= _minpy_fc(" in graph["ir"]) == checked, graph["ir"]

    minpy_jit.clear_cache()
    with minpy_jit.jit():
        got = step(x, w, b)
    assert_same(expected, got)
    [graph] = minpy_jit.graphs()
    assert ("= _minpy_fc(" in graph["ir"]) == (checked and not in_band), graph["ir"]


@pytest.mark.parametrize("weight_grad", [True, False])
def test_bias_gradient_without_the_weights_is_eagers(weight_grad):
    """MXNet's oneDNN backward writes the bias gradient only where the weight's is wanted: with
    the weight a constant, eager leaves the bias's gradient buffer as it was (zeros here). Such a
    product keeps MXNet's operator, so jit() gives eager's result; with the weight's gradient
    wanted it is ours, and both give the true sums."""
    x, w, b = nd.array(wide(64, 784, seed=1)), nd.array(wide(256, 784, seed=2)), nd.array(wide(256, seed=3))

    def step(x, w, b):
        if weight_grad:
            w.attach_grad()
        b.attach_grad()
        with autograd.record():
            y = nd.FullyConnected(x, w, b, num_hidden=256)
            s = (y * 0.5).sum()
        s.backward()
        return [b.grad] + ([w.grad] if weight_grad else [])

    r = run_both(step, x, w, b)
    assert_same(*r)
    ir = minpy_jit.graphs()[0]["ir"]
    assert ("= _minpy_fc(" in ir) == (weight_grad and exact(64, 784, 256, backward=True)), ir
    if weight_grad:  # the true sums: 0.5 over 64 rows
        assert np.array_equal(r[1][0].asnumpy(), np.full(256, 0.5 * 64, np.float32))
