"""Ill-matched inputs under jit() behave as they do eagerly: the same error at the call or at the
first read, never a crash, never values where eager raises, and arrays made before (or beside)
the failing op keep eager's values (issue 10; found by tests/stress/bad_input_sweep.py).
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, nd

import minpy_jit


def _read(a):
    try:
        return ("v", a.asnumpy().tobytes(), a.shape, str(a.dtype))
    except mx.MXNetError as e:
        return ("e", str(e).strip().splitlines()[-1])


def _eager_and_jit(make_inputs, call):
    """Eager: the call's outcome and its results' reads. jit(): the same, with arrays made
    before the call (outside and inside the scope) and after it, all read afterwards."""
    try:
        outs = call(*make_inputs())
        eager = ("reads", [_read(o) for o in outs])
    except mx.MXNetError as e:
        eager = ("call", str(e).strip().splitlines()[-1])
    _clear_errors()
    before = nd.array([1.0, 2.0, 3.0])
    with minpy_jit.jit():
        inside = before * 2
        try:
            outs = call(*make_inputs())
            got = ("reads", [_read(o) for o in outs])
        except mx.MXNetError as e:
            got = ("call", str(e).strip().splitlines()[-1])
        after = before + 1
    assert inside.asnumpy().tolist() == [2, 4, 6]
    assert after.asnumpy().tolist() == [2, 3, 4]
    assert before.asnumpy().tolist() == [1, 2, 3]
    _clear_errors()
    return eager, got


def _clear_errors():
    """Reads any error left in MXNet: one nobody reads may fail later, unrelated ops (README)."""
    try:
        nd.waitall()
    except mx.MXNetError:
        pass


def _int_matrix():
    return [nd.array(np.arange(6).reshape(2, 3), dtype="int32")]


@pytest.mark.parametrize("call", [
    lambda x: [nd.Activation(x, act_type="relu")],
    lambda x: [nd.LeakyReLU(x, act_type="leaky")],
    lambda x: [nd.softmax(x.astype("float32"), axis=5)],
], ids=["Activation", "LeakyReLU", "softmax-axis"])
def test_kernel_refusing_its_inputs_while_it_runs_fails_only_its_results(call):
    """These kernels refuse int32 (or an axis out of range) only while they run: eagerly the first
    read of the result raises; in a compiled graph the ops after it were skipped without an error
    (`after` read uninitialised memory). Their trial run finds it: the trace runs op by op."""
    minpy_jit.reset_stats()
    eager, got = _eager_and_jit(_int_matrix, call)
    assert eager[0] == "reads" and eager[1][0][0] == "e", eager
    assert got == eager
    assert "can fail while it runs" in str(minpy_jit.stats()["fallback_reasons"])


def test_op_refusing_its_inputs_when_called_raises_at_the_call():
    """L2Normalization refuses int32 when it is called (not in its shape or type function):
    the trial run sees it, and the recorded call raises there, with MXNet's message."""
    eager, got = _eager_and_jit(_int_matrix, lambda x: [nd.L2Normalization(x)])
    assert eager[0] == "call" and got[0] == "call"
    assert eager[1].startswith("MXNetError: ") and got[1].endswith(eager[1][len("MXNetError: "):]), (eager, got)


@pytest.mark.parametrize("np_shape", [False, True])
def test_zero_size_slice_keeps_the_graphs_other_results(np_shape):
    """MXNet's oneDNN slice fails while it runs when its result is zero-size ("Check failed:
    delay_alloc"; eagerly an error nobody reads). In a compiled graph the graph's other results
    were left unallocated (reading `inside` raised that error) or unwritten (`after` read
    garbage). Its trial run fails too: the trace runs op by op, as eagerly."""
    minpy_jit.reset_stats()
    with mx.util.np_shape(np_shape):
        x = nd.array(np.arange(6).reshape(2, 3))
        for begin, end in [((0, 0), (0, 2)), ((1000, 1000), (1, 2))]:
            eager, got = _eager_and_jit(lambda: [x], lambda a: [nd.slice(a, begin=begin, end=end)])
            assert eager == got and 0 in eager[1][0][2], (eager, got)
    assert "slice: can fail while it runs (its trace ran op by op)" in minpy_jit.stats()["fallback_reasons"]


@pytest.mark.parametrize("call", [
    lambda x: [nd.random.uniform_like(x)],
    lambda x: [nd.Dropout(x)],
    lambda x: [nd.random.uniform(high=-1.0, shape=(2, 3)) + x.astype("float32")],
], ids=["uniform_like", "Dropout", "uniform-high-below-low"])
def test_random_op_refusing_its_inputs_behaves_as_eager(call):
    """Random ops are not tried (a trial would take numbers from the generator): given an integer
    array they fail when called or while they run, and in a compiled graph the ops after them were
    skipped without an error. Such a call now runs eagerly; uniform with only `high` below its
    default low 0 counts as a sampler that can fail (bad_input_sweep.py)."""
    mx.random.seed(3)
    eager, got = _eager_and_jit(_int_matrix, call)
    assert got == eager


def _batch_norm_v1(*arrays):
    """BatchNorm_v1 with its moving statistics (nd.BatchNorm_v1 cannot pass them: its wrapper lists
    no auxiliary states), through the path every generated wrapper takes."""
    import ctypes
    from mxnet.base import _LIB, OpHandle, c_str, check_call
    from mxnet.ndarray import register
    h = OpHandle()
    check_call(_LIB.NNGetOpHandle(c_str("BatchNorm_v1"), ctypes.byref(h)))
    return register._imperative_invoke(h.value, list(arrays), [], [], None, False, True)[0]


def test_failing_batch_norm_v1_leaves_gamma_as_eager():
    """BatchNorm_v1 with fix_gamma writes ones into gamma when it runs; given 3-d or float16 data it
    fails while it runs, and eagerly gamma keeps its values. The ones were recorded as a write of
    their own, which ran where the op had failed (bad_input_sweep.py: 6 cases). Such a call now
    runs as MXNet's op where it is called."""
    for data in (np.random.RandomState(0).uniform(size=(2, 3, 4)).astype(np.float32), np.ones((2, 3, 2, 2), np.float16)):
        gammas = []

        def make():
            g = nd.array([0.5, 0.6, 0.7])
            gammas.append(g)
            return [nd.array(data, dtype=data.dtype), g, nd.zeros(3), nd.zeros(3), nd.ones(3)]

        eager, got = _eager_and_jit(make, lambda *arrays: [_batch_norm_v1(*arrays), arrays[1] * 1])
        assert eager[1][0][0] == "e", eager
        assert got == eager
        assert gammas[0].asnumpy().tolist() == gammas[1].asnumpy().tolist() == [0.5, 0.6000000238418579,
                                                                                 0.699999988079071]


@pytest.mark.parametrize("bad", [dict(state_size=-1), dict(num_layers=-1)])
def test_rnn_failing_while_it_runs_in_training_fails_only_its_results(bad):
    """RNN counts as a random op (its dropout between layers), so it was never tried; without
    dropout it draws nothing, and a bad state_size or num_layers fails while it runs: in a compiled
    graph the ops after it were skipped without an error (`after` read garbage). Tried now."""
    rs = np.random.RandomState(0)
    x, p, s = rs.uniform(size=(3, 2, 4)), rs.uniform(size=(55,)), rs.uniform(size=(1, 2, 5))
    params = dict(dict(state_size=5, num_layers=1, mode="rnn_tanh"), **bad)

    def call(a, b, c):
        with autograd.train_mode():
            return [nd.RNN(a, b, c, **params)]

    eager, got = _eager_and_jit(lambda: [nd.array(x), nd.array(p), nd.array(s)], call)
    assert eager[1][0][0] == "e", eager
    assert got == eager


@pytest.mark.parametrize("call", [
    lambda x, p, s: [nd.RNN(x, p, s, state_size=5, num_layers=1, mode="lstm")],
    lambda x, p, s: [nd._internal._histogram(p, s, bin_cnt=3)],
], ids=["RNN-lstm-without-cell-state", "histogram-bins-and-bin_cnt"])
def test_wrong_input_count_raises_eager_message(call):
    """Eager MXNet checks the number of inputs first ("Operator RNN expects 4 inputs, but got 3
    instead."); ours came from composing the symbol ("Incorrect number of arguments", or a shape
    mismatch of RNN's parameters) (bad_input_sweep.py: 15 such texts)."""
    rs = np.random.RandomState(0)
    make = lambda: [nd.array(rs.uniform(size=(3, 2, 4))), nd.array(rs.uniform(size=(55,))),  # noqa: E731
                    nd.array(rs.uniform(size=(1, 2, 5)))]
    eager, got = _eager_and_jit(make, call)
    assert eager[0] == "call" and got[0] == "call", (eager, got)
    assert "expects" in eager[1] and got[1].endswith(eager[1][len("MXNetError: "):]), (eager, got)


def test_batch_norm_fix_gamma_on_a_onednn_concat_gamma_fails_as_eager():
    """A gamma of (2, 1) + (2, 3) concatenated along axis 1 is left in oneDNN's layout: eagerly the
    BatchNorm fails while it runs and gamma keeps its values. Recorded, fix_gamma's write of ones
    made gamma default-layout first, and the op gave values."""
    rs = np.random.RandomState(0)
    a, b, x = rs.uniform(size=(2, 1)), rs.uniform(size=(2, 3)), rs.uniform(size=(2, 8))
    gammas = []

    def call(a, b, x):
        g = nd.concat(a, b, dim=1)
        gammas.append(g)
        return [nd.BatchNorm(x, g, nd.zeros(8), nd.zeros(8), nd.ones(8), fix_gamma=True), g * 1]

    eager, got = _eager_and_jit(lambda: [nd.array(a), nd.array(b), nd.array(x)], call)
    assert eager[1][0][0] == "e", eager
    assert got == eager
    assert gammas[0].asnumpy().tolist() == gammas[1].asnumpy().tolist()
