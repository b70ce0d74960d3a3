"""A graph that is one fused kernel runs as one engine operation calling the kernel, not through
MXNet's CachedOp (config direct_kernels, cpp/src/kernel_launch.h). Every case compares with eager
MXNet bit for bit and checks which way the graph ran (stats()['kernels_launched_directly'])."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd

import minpy_jit

from conftest import arr, assert_same, direct_launches, rand, run_threads


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    minpy_jit.clear_cache()
    yield


def chain(x, reps=20):
    for _ in range(reps):
        x = nd.relu(x * 1.01 + 0.5)
    return x


chain_fn = minpy_jit.function(chain)


def test_function_and_jit_launch_the_kernel_and_match_eager():
    x = arr(rand(32, 32, seed=1))
    want = chain(x)
    before = direct_launches()
    for _ in range(3):
        assert_same(want, chain_fn(x))
    with minpy_jit.jit():
        got = chain(x)
    assert_same(want, got)
    assert direct_launches() - before >= 3


def test_switched_off_runs_the_cached_op_with_the_same_bits():
    x = arr(rand(16, 8, seed=2))
    on = chain_fn(x).asnumpy()
    minpy_jit.config(direct_kernels=False)
    try:
        before = direct_launches()
        off = chain_fn(x).asnumpy()
        assert direct_launches() == before
    finally:
        minpy_jit.config(direct_kernels=True)
    assert np.array_equal(on, off)


def test_input_still_being_computed_is_waited_for():
    big = arr(rand(384, 384, seed=3))
    before = direct_launches()
    for k in range(3):
        a = nd.dot(big, big) * (k + 1)         # pending on MXNet's worker when the kernel is pushed
        s = nd.slice(a, begin=(0, 0), end=(24, 24))
        assert_same(chain(s), chain_fn(s))
    assert direct_launches() - before == 3


def test_output_read_by_a_later_op_is_ready():
    x = arr(rand(8, 8, seed=4))
    y = chain_fn(x)
    z = nd.dot(y, y)                           # an MXNet op reading the kernel's output
    assert_same(nd.dot(chain(x), chain(x)), z)


def test_inputs_written_by_convolutions_in_onednn_layout():
    # oneDNN convolutions leave their outputs in a blocked layout; the kernel must read the values.
    before = direct_launches()
    data = arr(rand(2, 8, 10, 10, seed=5))
    w1, w2 = arr(rand(16, 8, 3, 3, seed=6)), arr(rand(16, 16, 3, 3, seed=7))
    for _ in range(3):
        y = nd.Convolution(data, w1, no_bias=True, kernel=(3, 3), num_filter=16)
        y = nd.Convolution(y, w2, no_bias=True, kernel=(3, 3), num_filter=16)
        assert_same(chain(y, 3), minpy_jit.function(chain)(y, 3))
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(16, 3), gluon.nn.Conv2D(16, 3))
    net.initialize(mx.init.Uniform(1.0))
    net.hybridize(static_alloc=True, static_shape=True)
    for _ in range(3):
        y = net(data)
        assert_same(chain(y, 3), chain_fn(y, 3))
    assert direct_launches() - before == 6


def test_output_written_into_an_existing_array():
    def into(x, out):
        nd.relu(x * 2.0 - 0.25, out=out)
        return out

    x = arr(rand(6, 5, seed=8))
    want = into(x, nd.zeros((6, 5)))
    before = direct_launches()
    for _ in range(3):
        target = nd.ones((6, 5))
        with minpy_jit.jit():
            into(x, target)
        assert_same(want, target)
    base = nd.ones((10, 5))                    # a view: rows 2..7 of a bigger array
    with minpy_jit.jit():
        into(x, base[2:8])
    expect = np.ones((10, 5), np.float32)
    expect[2:8] = want.asnumpy()
    assert np.array_equal(base.asnumpy(), expect)
    assert direct_launches() - before == 4


def test_in_place_update_of_an_input():
    def bump(x):
        x += nd.relu(x) * 0.5
        return x

    bump_fn = minpy_jit.function(bump)
    a, b = arr(rand(7, 3, seed=9)), arr(rand(7, 3, seed=9))
    before = direct_launches()
    for _ in range(3):
        bump(a)
        bump_fn(b)
        assert_same(a, b)
    assert direct_launches() == before                # the kernel would write storage it reads: the CachedOp runs


def test_broadcast_input_and_a_view_of_another_input():
    def mix(x, row):
        return (nd.broadcast_add(x, row) * 0.5 - x) * x

    mix_fn = minpy_jit.function(mix)
    x, row = arr(rand(9, 12, seed=10)), arr(rand(1, 12, seed=11))
    before = direct_launches()
    for _ in range(3):
        assert_same(mix(x, row), mix_fn(x, row))
        assert_same(mix(x, x[2:3]), mix_fn(x, x[2:3]))   # both inputs in one storage
    # a view starting inside its storage runs the CachedOp (kernel_job.cc launch_kernel)
    assert direct_launches() - before == 3


def test_recorded_graph_is_an_autograd_node_not_a_direct_launch():
    x = arr(rand(5, 5, seed=12))
    x.attach_grad()
    with autograd.record():
        y = chain(x, 4)
    y.backward()
    want = x.grad.asnumpy()
    before = direct_launches()
    for _ in range(2):
        with minpy_jit.jit():
            with autograd.record():
                y = chain(x, 4)
        y.backward()  # after the scope: the graph ran recorded, as an autograd node
        assert np.array_equal(x.grad.asnumpy(), want)
    assert direct_launches() == before
    with minpy_jit.jit():  # backward() inside the scope: the gradient is in the graph, which is not recorded
        with autograd.record():
            y = chain(x, 4)
        y.backward()
    assert np.array_equal(x.grad.asnumpy(), want)
    assert direct_launches() == before + 1


def test_an_input_carrying_an_error_raises_as_eagerly():
    not_positive_definite = nd.array([[1.0, 2.0], [2.0, 1.0]])

    def failing(fn):
        with pytest.raises(mx.base.MXNetError) as info:
            fn(nd.linalg.potrf(not_positive_definite)).wait_to_read()
        return str(info.value).splitlines()[-1]

    x = arr(rand(2, 2, seed=13))
    for _ in range(3):
        chain_fn(x, 3).wait_to_read()
    assert failing(lambda a: chain_fn(a, 3)) == failing(lambda a: chain(a, 3))
    assert_same(chain(x, 3), chain_fn(x, 3))     # and the next call is right again


def test_float16_runs_the_cached_op():
    h = arr(rand(4, 4, seed=14)).astype(np.float16)
    before = direct_launches()
    assert_same(chain(h, 3), chain_fn(h, 3))
    assert direct_launches() == before


def test_threads_calling_one_fragment():
    inputs = [arr(rand(16, 16, seed=20 + t)) for t in range(4)]
    wants = [chain(x).asnumpy() for x in inputs]
    errors = []

    def worker(t):
        def run():
            for _ in range(50):
                if not np.array_equal(chain_fn(inputs[t]).asnumpy(), wants[t]):
                    errors.append(t)
        return run

    before = direct_launches()
    run_threads(*[worker(t) for t in range(4)])
    assert not errors
    assert direct_launches() - before == 200


def two_units(x, row):
    return nd.relu(x) * 2 - nd.broadcast_add(x, row) * 0.5 + x   # the fuser makes two kernels


def head_read_later(x, row):
    a = nd.broadcast_add(x, row) * 0.5       # returned, and read by the second kernel
    b = nd.relu(x) * 2 - a
    return a, b


@pytest.mark.parametrize("program", [two_units, head_read_later])
def test_graph_of_several_kernels_is_one_launch(program):
    x, row = arr(rand(9, 12, seed=30)), arr(rand(1, 12, seed=31))
    want = program(x, row)
    before = direct_launches()
    for _ in range(3):
        with minpy_jit.jit():
            got = program(x, row)
        assert_same(want, got)
    assert [g["nodes"] for g in minpy_jit.graphs()] == [2]
    assert direct_launches() - before == 3
    fn = minpy_jit.function(program)
    for _ in range(3):
        assert_same(want, fn(x, row))
    assert direct_launches() - before == 6


def test_large_chain_of_two_kernels_on_both_threads():
    # W2's chain: two kernels over 262,144 elements (enough work to split between threads),
    # the intermediate in a buffer of the launch's own.
    def w2(x):
        for _ in range(3):
            x = nd.tanh(x * 0.9 + 0.1) * nd.sigmoid(x)
        return x

    x = arr(rand(512, 512, seed=32))
    want = w2(x)
    before = direct_launches()
    for _ in range(2):
        with minpy_jit.jit():
            got = w2(x)
        assert_same(want, got)
    assert direct_launches() - before == 2


def graph_ops():
    """The operators of the one graph compiled since the test began (variables left out)."""
    [g] = [g for g in minpy_jit.graphs() if "fragment" in g["site"]] or minpy_jit.graphs()[:1]
    import json
    return sorted({n["op"] for n in json.loads(g["json"])["nodes"] if n["op"] != "null"})


def concat_rows(a, b):
    return nd.relu(nd.concat(a, b, dim=0)) * 2


def concat_columns(a, b):
    return nd.relu(nd.concat(a, b, dim=1)) * 2


@pytest.mark.parametrize("program,direct", [(concat_rows, True), (concat_columns, False)])
def test_concat_of_rows_is_part_of_the_launch(program, direct):
    """Concat along the first axis copies the inputs one after the other inside the launch;
    along another axis the graph stays a CachedOp. Eager's bits either way."""
    a, b = arr(rand(3, 5, seed=40)), arr(rand(3, 5, seed=41))
    want = program(a, b)
    before = direct_launches()
    fn = minpy_jit.function(program)
    for _ in range(3):
        assert_same(want, fn(a, b))
    assert "Concat" in graph_ops()
    assert direct_launches() - before == (3 if direct else 0)  # the capture's graph under jit() too


def _fc_taken(rows, inputs, outputs):
    return minpy_jit._core.fc_kernel_blocks(rows, inputs, outputs, True, False, False) is not None


def test_inference_mlp_is_one_launch_of_products_and_kernels():
    """Dense layers of our product (_minpy_fc, its relu folded in) and a fused tail: one launch
    calling the products and the kernel in turn, with eager's bits (under jit() and as a function)."""
    x = arr(rand(64, 784, seed=42))
    w1, b1 = arr(rand(256, 784, seed=43) * 0.05), arr(rand(256, seed=44))
    w2, b2 = arr(rand(10, 256, seed=45) * 0.05), arr(rand(10, seed=46))

    def mlp(x, w1, b1, w2, b2):
        h = nd.Activation(nd.FullyConnected(x, w1, b1, num_hidden=256), act_type="relu")
        return nd.tanh(nd.FullyConnected(h, w2, b2, num_hidden=10)) * 0.5 + 1

    want = mlp(x, w1, b1, w2, b2)
    before = direct_launches()
    for _ in range(3):
        with minpy_jit.jit():
            got = mlp(x, w1, b1, w2, b2)
        assert_same(want, got)
    taken = _fc_taken(64, 784, 256) and _fc_taken(64, 256, 10)
    assert (graph_ops() == ["_minpy_fc", "_minpy_fused_elemwise"]) == taken, graph_ops()
    assert direct_launches() - before == (3 if taken else 0)


def test_lstm_sequence_function_is_one_launch():
    """W4's shape over 6 steps as a @function: the batched input projections' Concat and
    product, the recurrent products and the cell's fused kernels run as one launch."""
    cell = gluon.rnn.LSTMCell(128, input_size=64)
    cell.initialize(mx.init.Xavier(), force_reinit=True)
    xs = [arr(rand(16, 64, seed=50 + t)) for t in range(6)]
    h0, c0 = arr(rand(16, 128, seed=60)), arr(rand(16, 128, seed=61))

    def sequence(xs, h, c):
        states = [h, c]
        for x in xs:
            _, states = cell(x, states)
        return states

    want = sequence(xs, h0, c0)
    fn = minpy_jit.function(sequence)
    before = direct_launches()
    for _ in range(3):
        assert_same(want, fn(xs, h0, c0))
    ops = graph_ops()
    direct = set(ops) <= {"Concat", "_minpy_fc", "_minpy_fused_elemwise"}
    assert direct == _fc_taken(16, 128, 512), ops
    assert direct_launches() - before == (2 if direct else 0)  # the capture runs under jit(), where the product is MXNet's
