"""Inputs of a jit() graph that are the same arrays run after run are bound as CachedOp
parameters (config stable_params, Executor::params in cpp/src/executor.h): the results stay
eager's whatever happens to those arrays between runs (written in place, replaced, freed and
their handles reused, other threads running the graph on their own arrays)."""
import gc

import mxnet as mx
import numpy as np
import pytest
from mxnet import nd
from mxnet.gluon import rnn

import minpy_jit

from conftest import arr, assert_same, rand, run_threads


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    minpy_jit.clear_cache()  # param_inputs() counts the graphs this test compiles
    yield


def layer(x, w, b):
    h = nd.FullyConnected(x, w, b, num_hidden=4)
    for _ in range(3):
        h = nd.tanh(h) * 0.5 + x.sum()
    return nd.relu(h)


def jitted(fn, *args):
    with minpy_jit.jit():
        out = fn(*args)
    return out


def param_inputs():
    """Parameters bound by the graphs run so far (all cached graphs)."""
    return sum(g["param_inputs"] for g in minpy_jit.graphs())


def check(x, w, b):
    got = jitted(layer, x, w, b)
    want = layer(x, w, b)
    assert_same(want, got)


def test_stable_inputs_become_parameters_and_stay_right():
    w, b = arr(rand(4, 5, seed=1)), arr(rand(4, seed=2))
    base = arr(rand(3, 5, seed=10))
    for k in range(4):
        check(base * (k + 1), w, b)       # x is a new array every run: a data input
    assert param_inputs() == 2            # w and b: parameters
    w += 1                                # written in place, outside the graph
    check(arr(rand(3, 5, seed=20)), w, b)
    w[:] = arr(rand(4, 5, seed=3))
    check(arr(rand(3, 5, seed=21)), w, b)
    assert param_inputs() == 2


def test_replaced_arrays_stay_right_and_the_binding_is_given_up():
    w, b = arr(rand(4, 5, seed=1)), arr(rand(4, seed=2))
    for k in range(3):
        check(arr(rand(3, 5, seed=k)), w, b)
    assert param_inputs() == 2
    for k in range(6):                    # b replaced by another array run after run
        b = arr(rand(4, seed=30 + k))
        check(arr(rand(3, 5, seed=40 + k)), w, b)
    assert param_inputs() == 0            # given up: every input passed per run again
    check(arr(rand(3, 5, seed=50)), w, b)


def test_a_freed_parameter_whose_handle_is_reused_is_not_taken_for_it():
    """The array bound as a parameter is freed and a new one made, likely at the same address
    (NDArray handle): the new values are used."""
    b = arr(rand(4, seed=2))
    x = arr(rand(3, 5, seed=9))
    for k in range(8):
        w = arr(rand(4, 5, seed=100 + k))
        check(x, w, b)
        del w
        gc.collect()


def test_off_gives_the_same_results():
    w, b = arr(rand(4, 5, seed=1)), arr(rand(4, seed=2))
    x = arr(rand(3, 5, seed=3))
    on = [jitted(layer, x, w, b).asnumpy() for _ in range(3)]
    minpy_jit.clear_cache()
    minpy_jit.config(stable_params=False)
    off = [jitted(layer, x, w, b).asnumpy() for _ in range(3)]
    assert param_inputs() == 0
    for a, c in zip(on, off):
        assert np.array_equal(a, c)


def test_threads_running_one_graph_on_their_own_arrays():
    def worker(seed):
        w, b = arr(rand(4, 5, seed=seed)), arr(rand(4, seed=seed + 1))
        xs = [arr(rand(3, 5, seed=seed + k)) for k in range(30)]
        news = {k: arr(rand(4, 5, seed=seed + 100 + k)) for k in range(30) if k % 7 == 3}

        def run():
            for k, x in enumerate(xs):
                got = jitted(layer, x, w, b)
                assert_same(layer(x, w, b), got)
                if k in news:
                    w[:] = news[k]
        return run
    run_threads(*[worker(s) for s in (1, 1000, 2000)])


def test_lstm_sequence_segments_equal_eager():
    """W4's shape: a 40-step LSTMCell sequence runs as segments (some launched in the background),
    the cell's weights parameters of each; bit for bit against eager, also after the weights
    change in place between sequences."""
    mx.random.seed(0)
    cell = rnn.LSTMCell(32, input_size=16)
    cell.initialize(mx.init.Xavier())
    xs = [arr(rand(4, 16, seed=s)) for s in range(40)]
    h0, c0 = arr(rand(4, 32, seed=98)), arr(rand(4, 32, seed=99))

    def loop():
        states = [h0, c0]
        for x in xs:
            _, states = cell(x, states)
        return states

    for k in range(5):
        got = jitted(loop)
        want = loop()
        assert_same(want, got)
        if k == 2:
            w = cell.i2h_weight.data()
            w[:] = w * 0.5
    assert param_inputs() > 0


def test_an_input_the_graph_updates_in_place_is_never_a_parameter():
    """rmsprop_update writes its state n in place (FMutateInputs); a graph reading n in a later
    flush of the same loop must see every update. Bound as a parameter, n was read one or two
    updates behind under load (fuzz seed 11004645, tests/stress/repros): only the gradient,
    the same array every run and read-only, becomes one."""
    grad = arr(rand(3, 4, seed=60))
    n = nd.array(np.random.RandomState(61).uniform(0.0, 0.5, (3, 4)).astype(np.float32))

    def loop(grad, n):
        seen = []
        for _ in range(6):
            w = grad * 0.5 - 2.7
            nd.rmsprop_update(w, grad, n, lr=0.75, out=w)
            minpy_jit.flush()
            seen.append(nd.concat(n, grad, dim=0))  # the next flush reads the state
            minpy_jit.flush()
        return seen, n

    want = loop(grad, n.copy())
    got_n = n.copy()
    with minpy_jit.jit():
        got = loop(grad, got_n)
    assert_same(want, got)
    updates = [g for g in minpy_jit.graphs() if any(s["op"] == "rmsprop_update" for s in g["steps"])]
    # its inputs: the gradient (a parameter) and the state (written: a data input)
    assert [g["param_inputs"] for g in updates] == [1], [(g["param_inputs"], g["ir"]) for g in updates]
