"""Batched projections (cpp/src/projections.h): FullyConnected calls of one weight on independent
data run as one call over all their rows, each call's result a block of its rows.

Every test compares with eager MXNet bit for bit, and checks from graphs() whether the graph
batched its projections. Whether a shape may be batched is MXNet's kernel's answer on this
machine (`_core.row_blocks_exact`, the check the rewrite itself makes): the structural
assertions follow it, the values must equal eager's either way.
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, nd
from mxnet.gluon import rnn

import minpy_jit
from minpy_jit import _core
from conftest import assert_same, rand, run_both

pytestmark = pytest.mark.usefixtures("whole_traces", "isolated_runtime")


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test looks at the graphs it compiled."""
    minpy_jit.clear_cache()


def batched_in_last_graph():
    return minpy_jit.graphs()[-1]["batched_projections"]


def projections(ir):
    """FullyConnected calls in a graph printout, MXNet's or ours (the batched call may be large
    enough for our kernels, tests/test_fc_kernels.py)."""
    return ir.count("= FullyConnected(") + ir.count("= _minpy_fc(")


def cell_loop(cell, xs, h, c):
    states = [h, c]
    outs = []
    for x in xs:
        out, states = cell(x, states)
        outs.append(out)
    return outs + states


def lstm(hidden, inputs, seed=0):
    mx.random.seed(seed)
    cell = rnn.LSTMCell(hidden, input_size=inputs)
    cell.initialize(mx.init.Xavier())
    return cell


def test_lstm_input_projections_batched_in_jit():
    """W4's shape: 12 steps of 16 rows, input 64, hidden 128. The input projections become one
    192-row call (read in place by the fused gate units); results equal eager's bit for bit."""
    cell = lstm(128, 64)
    xs = [nd.array(rand(16, 64, seed=t)) for t in range(12)]
    h0, c0 = nd.array(rand(16, 128, seed=50)), nd.array(rand(16, 128, seed=51))
    assert_same(*run_both(cell_loop, cell, xs, h0, c0))
    exact = _core.row_blocks_exact(16, 64, 512, 12, True)
    assert batched_in_last_graph() == (12 if exact else 0)
    if exact:
        ir = minpy_jit.graphs()[-1]["ir"]
        assert projections(ir) == 13 and "= Concat" in ir, ir  # 1 batched + 12 recurrent


def test_lstm_sequence_as_a_function():
    """The whole 50-step sequence as an @function: one fragment, its 50 input projections one call."""
    cell = lstm(128, 64, seed=1)
    xs = [nd.array(rand(16, 64, seed=100 + t)) for t in range(50)]
    h0, c0 = nd.zeros((16, 128)), nd.zeros((16, 128))
    want = cell_loop(cell, xs, h0, c0)
    seq = minpy_jit.function(cell_loop)
    for _ in range(3):  # captured, then replayed
        assert_same(want, seq(cell, xs, h0, c0))
    exact = _core.row_blocks_exact(16, 64, 512, 50, True)
    assert max(g["batched_projections"] for g in minpy_jit.graphs()) == (50 if exact else 0)


def test_gru_projections_with_results_read_by_other_ops():
    """A GRU cell's input projections, and projections whose results an MXNet op reads (a sum,
    a softmax): those get their rows as a slice_axis copy. Bits equal eager's."""
    mx.random.seed(3)
    cell = rnn.GRUCell(32, input_size=64)
    cell.initialize(mx.init.Xavier())
    w = nd.array(rand(48, 64, seed=4))
    b = nd.array(rand(48, seed=5))
    xs = [nd.array(rand(16, 64, seed=10 + t)) for t in range(6)]

    def program(xs, h):
        sums = []
        for x in xs:
            out, (h,) = cell(x, [h])
            p = nd.FullyConnected(x, w, b, num_hidden=48)
            sums.append(nd.softmax(p).sum(axis=1) + nd.sum(p))
        return sums + [h]

    h0 = nd.array(rand(16, 32, seed=6))
    assert_same(*run_both(program, xs, h0))
    expect = 6 * _core.row_blocks_exact(16, 64, 96, 6, True) + 6 * _core.row_blocks_exact(16, 64, 48, 6, True)
    assert batched_in_last_graph() == expect


def test_shape_whose_blocks_differ_is_not_batched():
    """Eight 64-row projections by a (256, 784) weight: on oneDNN machines the 512-row call sums
    rows otherwise than the 64-row ones (109,486 of its outputs differed in a test), so the check
    refuses them and each stays its own call; the values are eager's in every case."""
    w, b = nd.array(rand(256, 784, seed=7)), nd.array(rand(256, seed=8))
    xs = [nd.array(rand(64, 784, seed=20 + t)) for t in range(8)]

    def program(xs):
        return [nd.relu(nd.FullyConnected(x, w, b, num_hidden=256)) * 0.5 for x in xs]

    assert_same(*run_both(program, xs))
    exact = _core.row_blocks_exact(64, 784, 256, 8, True)
    assert batched_in_last_graph() == (8 if exact else 0)
    if not exact:
        assert projections(minpy_jit.graphs()[-1]["ir"]) == 8


def test_only_data_made_before_the_first_projection_joins():
    """Data computed between the projections (x_t = relu(raw_t) inside the loop) cannot join the
    batched call, which runs where the first projection was; data made before all of them can.
    No bias (no_bias=True) is batched alike."""
    w = nd.array(rand(48, 20, seed=9))
    raws = [nd.array(rand(16, 20, seed=30 + t)) for t in range(5)]

    def program(raws):
        ready = [nd.tanh(r) for r in raws]  # all made first: batched
        outs = [nd.FullyConnected(x, w, num_hidden=48, no_bias=True) for x in ready]
        late = []
        for r in raws:  # made one by one between the projections: not batched
            late.append(nd.FullyConnected(nd.relu(r), w, num_hidden=48, no_bias=True) * 2)
        return outs + late

    assert_same(*run_both(program, raws))
    exact = _core.row_blocks_exact(16, 20, 48, 5, False)
    assert batched_in_last_graph() == (5 if exact else 0)
    if exact:
        assert projections(minpy_jit.graphs()[-1]["ir"]) == 1 + 5


def test_data_written_in_place_after_its_projection():
    """x1 and x2 are overwritten (x1 += 1, x2 *= 2) after their projections and before the next
    one: the batched call reads their old values, as eager's calls did. A projection written into
    an existing array (out=) stays its own call."""
    w, b = nd.array(rand(16, 12, seed=11)), nd.array(rand(16, seed=12))

    def program(x1, x2, x3, dst):
        y1 = nd.FullyConnected(x1, w, b, num_hidden=16)
        x1 += 1
        y2 = nd.FullyConnected(x2, w, b, num_hidden=16)
        x2 *= 2
        y3 = nd.FullyConnected(x3, w, b, num_hidden=16)
        nd.FullyConnected(x3 * 3, w, b, num_hidden=16, out=dst)
        return y1 + y2 + y3, x1, x2, dst

    args = [rand(16, 12, seed=13), rand(16, 12, seed=14), rand(16, 12, seed=15), rand(16, 16, seed=16)]
    assert_same(*run_both(program, *[nd.array(a) for a in args]))
    assert batched_in_last_graph() == (3 if _core.row_blocks_exact(16, 12, 16, 3, True) else 0)


def test_projections_under_autograd_are_not_batched():
    """Recorded projections keep their own calls: a batched weight gradient would sum the steps'
    contributions in another order than eager's. Gradients equal eager's bit for bit."""
    w, b = nd.array(rand(10, 6, seed=17)), nd.array(rand(10, seed=18))
    xs = [nd.array(rand(3, 6, seed=40 + t)) for t in range(4)]

    def step():
        w.attach_grad()
        b.attach_grad()
        with autograd.record():
            loss = sum(nd.sum(nd.tanh(nd.FullyConnected(x, w, b, num_hidden=10))) for x in xs)
        loss.backward()
        return loss, w.grad.copy(), b.grad.copy()

    assert_same(*run_both(step))
    assert all(g["batched_projections"] == 0 for g in minpy_jit.graphs())


@pytest.mark.parametrize("option", ["batch_projections", "fuse"])
def test_turned_off(option):
    """config(batch_projections=False), or fuse=False (every graph rewrite of ours), batches nothing."""
    w, b = nd.array(rand(16, 8, seed=19)), nd.array(rand(16, seed=20))
    xs = [nd.array(rand(16, 8, seed=50 + t)) for t in range(3)]

    def program(xs):
        return [nd.FullyConnected(x, w, b, num_hidden=16) for x in xs]

    batched = {}
    for on in (True, False):
        minpy_jit.config(**{option: on})
        minpy_jit.clear_cache()
        assert_same(*run_both(program, xs))
        batched[on] = batched_in_last_graph()
    assert batched == {True: 3 if _core.row_blocks_exact(16, 8, 16, 3, True) else 0, False: 0}


def test_row_slices_read_in_place_by_a_unit():
    """slice_axis(axis=0) of a 2-D array no unit makes is read in place by the unit consuming it
    (the form batched projections take): rows at an offset, a block used twice, and a one-row
    block broadcast over a unit's rows (which is not read as a block)."""
    x = nd.array(rand(10, 8, seed=60))
    y = nd.array(rand(4, 8, seed=61))

    def program(x, y):
        top = nd.slice_axis(x, axis=0, begin=2, end=6)
        one = nd.slice_axis(x, axis=0, begin=9, end=10)
        a = nd.tanh(top) * y + top
        b = nd.broadcast_mul(nd.sigmoid(y), one) - 1
        return a, b, nd.sigmoid(nd.slice_axis(x, axis=0, begin=0, end=4) + 0.5)

    assert_same(*run_both(program, x, y))
    assert "axis=0" in minpy_jit.graphs()[-1]["ir"] and minpy_jit.stats()["fused_kernels"] >= 2


def test_one_row_slice_leaves_its_broadcasting_consumer_fused():
    """A one-row slice (here one element) stays MXNet's op: as a row block it would start a unit
    its broadcasting consumer joins and then fails to build, and that consumer's chain, fused
    before row blocks existed, would run unfused."""
    x = nd.array(rand(10, 1, seed=62))
    y = nd.array(rand(4, 8, seed=63))

    def program(x, y):
        s = nd.slice_axis(x, axis=0, begin=3, end=4)
        return nd.broadcast_mul(nd.tanh(y), s) + 1

    assert_same(*run_both(program, x, y))
    assert minpy_jit.stats()["fused_ops"] == 3  # tanh, broadcast_mul, _plus_scalar


def test_blocks_of_other_row_counts_are_not_batched():
    """Only blocks of a multiple of 16 rows are batched: 4 blocks of (2, 41) by (201, 41) pass the
    check on random and underflowing draws, yet on rare subnormal data (115 of 24 million
    outputs) the batched call gave another sign of zero than eager's calls. Here, on such data,
    they stay apart and agree with eager."""
    rng = np.random.RandomState(16813)
    tiny = np.float32(1e-39)
    w = nd.array(rng.standard_normal((201, 41)).astype(np.float32) * tiny)
    xs = [nd.array(rng.standard_normal((2, 41)).astype(np.float32) * tiny) for _ in range(4)]

    def program(xs):
        return [nd.FullyConnected(x, w, num_hidden=201, no_bias=True) for x in xs]

    assert_same(*run_both(program, xs))
    assert batched_in_last_graph() == 0
