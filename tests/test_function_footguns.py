"""How trace-and-replay tools go silently wrong, and what @minpy_jit.function does instead.

A tool that records a function once and replays the recording (hybridize, TinyJit,
torch.jit.trace) freezes whatever the recording saw: the branch taken, the value of a
global or of a Python scalar, side effects on Python objects, a closure variable. Each
test below calls a decorated function across the change that would be frozen and
checks every result against the undecorated function; the docstring says which
mechanism keeps it right (a boundary that stays Python, or a guard that fails and
compiles the new case).
"""
import mxnet as mx
import numpy as np
import pytest
from mxnet import nd

import minpy_jit
from minpy_jit import _core, intercept

from conftest import arr, assert_same, rand


@pytest.fixture(autouse=True)
def _isolate(isolated_runtime):
    _core.fragment_reset_stats()
    yield
    assert not intercept.hooks_active()


def frozen_by_a_trace(fn, *args):
    """What a trace-once tool would return: the first call's recording, replayed. Here the
    recording is simulated by calling fn with the first call's arguments."""
    return fn(*args)


# ------------------------------------------------------------------ frozen branch

def test_frozen_branch_on_array_data():
    """Footgun: `if x.sum() > 0` is evaluated once by a tracer; later calls replay the branch
    the first call took. Here the `if` is a boundary: it stays Python and reads the value on
    every call (the fragments before and after it are compiled)."""
    @minpy_jit.function
    def f(x):
        y = x * 2 - 1
        if y.sum().asscalar() > 0:
            y = nd.relu(y)
        else:
            y = nd.tanh(y) - 5
        return y + 1

    pos, neg = arr(np.full((3,), 2.0, np.float32)), arr(np.full((3,), -2.0, np.float32))
    for x in (pos, neg, pos, neg):
        assert_same(f.original(x), f(x))
    assert [b.kind for b in f.plan.boundaries] == ["if"]
    assert (f(neg).asnumpy() < -3).all()  # a frozen branch would give relu(...) + 1 >= 1


def test_frozen_branch_on_a_python_value():
    """Footgun: a branch on an argument (`training`) frozen at its first value. Here it is a
    boundary too, so each call takes its own branch."""
    @minpy_jit.function
    def f(x, training):
        if training:
            return nd.Dropout(x, p=0.0) * 3
        return x * 2

    x = arr(rand(4))
    for t in (True, False, True, False):
        assert_same(f.original(x, t), f(x, t))


def test_frozen_loop_count():
    """Footgun: a `for _ in range(n)` unrolled once stays unrolled n times. Here n is a guard:
    another n compiles another unrolling."""
    @minpy_jit.function
    def f(x, n):
        for _ in range(n):
            x = x * 0.5 + 1
        return x

    x = arr(rand(3))
    for n in (3, 3, 5, 0, 3):
        assert_same(f.original(x, n), f(x, n))
    assert len(f.fragments[0].info()["variants"]) == 3


def test_loop_that_runs_zero_times_keeps_the_value_from_before():
    """Footgun: a name assigned only inside an unrolled loop was taken as assigned by the
    fragment, so with n == 0 the compiled body lost the value it had before the fragment
    (UnboundLocalError where the plain function runs). Here such a name is also an input:
    the body starts from the value it had (found by tests/stress/function_fuzz.py, seeds 1525
    and 1506)."""
    @minpy_jit.function
    def f(x, y, n):
        if x.shape[0] > 1:
            t = x + 1          # bound before the fragment, on either branch
        else:
            t = x - 1
        for _ in range(n):
            t = y * 3          # the fragment's only write of t
            x = y * 2          # a parameter rebound in the loop, read after it
        u = t * 2 + x
        return u, t

    x, y = arr(rand(3, 2)), arr(rand(3, 2))
    for n in (2, 2, 0, 3, 0, 2):
        assert_same(f.original(x, y, n), f(x, y, n))


def test_value_carried_through_a_loop_that_may_not_run_is_kept_by_the_branch_before():
    """The same, one step further: the value the loop may leave as it was comes from a
    fragment in a branch before (`t = nd.abs(x)` in the else), whose write only the loop's
    carried input reads, so that write must be an output of its fragment too (seed 2290)."""
    @minpy_jit.function
    def f(x, y, n):
        if n % 2 == 0:
            t = x + 0.25
        else:
            t = nd.abs(x)
            y = y * t          # the only read of t, inside its own fragment
        for _ in range(n):
            t = x * 3          # an output (t is read elsewhere), so carried in
            y = y * 2
        if n > 100:            # a boundary: the loop's fragment ends above
            y = y - 1
        return y

    x, y = arr(rand(3, 2)), arr(rand(3, 2))
    for n in (1, 1, 0, 2, 3, 0):
        assert_same(f.original(x, y, n), f(x, y, n))


def test_augmented_assignment_in_a_loop_reads_the_fragments_result():
    """Footgun: `t += x` in a `while` loop (a boundary) reads t, which the fragment before the
    loop assigns; an analysis that counts `t +=` only as a write drops t from the fragment's
    outputs, and the loop fails on an unbound t (fuzz seed 1694)."""
    @minpy_jit.function
    def f(x, n):
        t = x * 2
        seen = [t]             # the loop's in-place `t +=` shows through the list
        j = 0
        while j < n:
            j += 1
            t += x             # the only read of t after the fragment
        return seen

    x = arr(rand(4))
    for n in (2, 2, 0, 3):
        assert_same(f.original(x, n), f(x, n))


# ------------------------------------------------------------------ frozen global

def test_frozen_global_scalar():
    """Footgun: `x * SCALE` records SCALE's value; rebinding the global is not seen. Here
    the global is an input of the fragment, guarded by value: a new value recompiles."""
    global SCALE
    SCALE = 0.5

    @minpy_jit.function
    def f(x):
        return x * SCALE

    x = arr(rand(3))
    outs = []
    for v in (0.5, 0.5, 2.0, 2.0, -1.0):
        SCALE = v
        outs.append(f(x))
        assert_same(x * v, outs[-1])
    frozen = frozen_by_a_trace(lambda a: a * 0.5, x)
    assert not np.allclose(frozen.asnumpy(), outs[-1].asnumpy())


def test_frozen_global_array_rebound_and_mutated():
    """Footgun: a tracer bakes a global array into the graph as a constant, or keeps the old
    array after the global is rebound. Here a global array is a graph input read on every
    call: a new array object, and new contents written in place, are both seen."""
    global TABLE
    TABLE = nd.ones((3,))

    @minpy_jit.function
    def f(x):
        return x + TABLE

    x = arr(rand(3))
    assert_same(x + 1, f(x))
    TABLE[:] = 5  # same array, new data
    assert_same(x + 5, f(x))
    TABLE = nd.full((3,), 7.0)  # another array
    assert_same(x + 7, f(x))
    TABLE = nd.ones((4,))  # another shape: the guard fails, the error is the one plain Python gives
    with pytest.raises(mx.base.MXNetError):
        f(x)


# ------------------------------------------------------------------ frozen Python scalar

def test_frozen_python_scalar_argument():
    """Footgun: a learning rate passed as a Python float is recorded as a constant attribute
    (`_mul_scalar(scalar=0.1)`); the next call's lr is ignored. Here the argument is guarded
    by value (and by type: 1 and 1.0 give different attributes)."""
    @minpy_jit.function
    def sgd(w, g, lr):
        w -= lr * g
        return w

    w, w2, g = arr(rand(4, seed=1)), arr(rand(4, seed=1)), arr(rand(4, seed=2))
    for lr in (0.1, 0.1, 0.05, 1, 1.0, 0.1):
        sgd(w, g, lr)
        sgd.original(w2, g, lr)
        assert_same(w2, w)


def test_a_scalar_changing_every_call_stops_compiling_and_stays_right():
    """A scalar that changes on every call (a schedule) would compile every call. Past the
    recompile limit the fragment runs as Python under jit() -- still right, with a warning."""
    minpy_jit.config(recompile_limit=3)

    @minpy_jit.function
    def f(x, t):
        return x * (0.9 ** t) + t

    x = arr(rand(3))
    for t in range(8):
        assert_same(f.original(x, t), f(x, t))
    frag = f.fragments[0]
    assert frag.disabled_reason is not None and "recompile_limit 3" in frag.disabled_reason
    assert any("WARNING" in m for m in f.messages)


def test_python_scalar_computed_from_shapes_is_not_frozen():
    """A Python value computed from an array's shape (`n = x.shape[0]`) is a function of the
    guarded shape: another shape is another variant, never the first one's n."""
    @minpy_jit.function
    def f(x):
        n = x.shape[0]
        return x.sum() / n, n

    for rows in (2, 2, 5, 2, 7):
        x = arr(rand(rows, 3))
        (got, gn), (want, wn) = f(x), f.original(x)
        assert gn == wn == rows
        assert_same(want, got)


# ------------------------------------------------------------------ side effects on Python objects

def test_list_append_in_the_body():
    """Footgun: `history.append(loss)` runs once while tracing; replays skip it, so the list
    stops growing (or keeps the traced array). Here the append is a boundary that runs on
    every call, with each call's own array."""
    history = []

    @minpy_jit.function
    def step(x):
        y = nd.tanh(x) * 2
        history.append(y)
        return y + 1

    xs = [arr(rand(3, seed=s)) for s in range(4)]
    for x in xs:
        step(x)
    assert len(history) == 4
    for x, h in zip(xs, history):
        assert_same(nd.tanh(x) * 2, h)
    assert [b.reason for b in step.plan.boundaries] == ["calls .append(): changes a Python object"]


def test_list_append_hidden_in_a_helper_is_found_at_capture():
    """The same effect behind a call the analysis cannot see through: the capture checks
    every call, refuses to replay the statement that calls an unknown Python function, and
    splits the fragment there (a graph break), so the helper runs on every call."""
    log = []

    def remember(v):
        log.append(v)
        return v

    @minpy_jit.function
    def f(x):
        y = x + 1
        z = helper(y)
        return z * 2

    globals()["helper"] = remember
    for s in range(4):
        f(arr(rand(2, seed=s)))
    assert len(log) == 4
    assert any("graph break" in m for m in f.messages), f.messages


def test_appending_to_a_list_the_fragment_builds_is_compiled():
    """Appending to a list created inside the fragment is no side effect: the list is a
    result, rebuilt by each replay."""
    @minpy_jit.function
    def f(x):
        outs = []
        for i in range(3):
            x = x * 2
            outs.append(x)
        return outs

    for _ in range(3):
        assert_same(f.original(arr(rand(2))), f(arr(rand(2))))
    assert not f.plan.boundaries and _core.fragment_stats()["replayed"] >= 2


# ------------------------------------------------------------------ closures

def test_rebinding_a_closure_variable():
    """Footgun: a closure variable captured by value at trace time. Here closure variables
    are read from their cells on every call (the rewritten function shares the original's
    cells), and guarded."""
    def make():
        temperature = 1.0

        @minpy_jit.function
        def softmax(x):
            return nd.softmax(x / temperature)

        def set_temperature(t):
            nonlocal temperature
            temperature = t
        return softmax, set_temperature

    softmax, set_t = make()
    x = arr(rand(5))
    for t in (1.0, 1.0, 0.1, 10.0, 1.0):
        set_t(t)
        assert_same(nd.softmax(x / t), softmax(x))


def test_closure_over_an_array_that_is_rebound():
    """A closure variable holding an array, rebound to another array: read again each call."""
    def make():
        bias = nd.zeros((3,))

        @minpy_jit.function
        def f(x):
            return x + bias

        def set_bias(b):
            nonlocal bias
            bias = b
        return f, set_bias

    f, set_bias = make()
    x = arr(rand(3))
    assert_same(x, f(x))
    set_bias(nd.full((3,), 2.0))
    assert_same(x + 2, f(x))


# ------------------------------------------------------------------ attributes of objects

def test_frozen_attribute_of_self():
    """Footgun: `self.scale` read once. Here attributes reached from the inputs are read on
    every call and guarded."""
    class Layer:
        scale = 1.0

        @minpy_jit.function
        def __call__(self, x):
            return x * self.scale

    layer, x = Layer(), arr(rand(3))
    for s in (1.0, 3.0, 3.0, 0.5):
        layer.scale = s
        assert_same(x * s, layer(x))


def test_property_with_an_effect_runs_once_per_call():
    """Footgun: a property (Python code run on every read) with an effect -- a counter, a
    schedule stepping -- is run once by a tracer, or run again by a guard that re-reads it
    (twice a call with the capture). Here reading a property defined outside mxnet is a call
    of unknown effects: its statement stays Python and runs exactly as often as in Python."""
    class Schedule:
        def __init__(self):
            self.steps = 0

        @property
        def lr(self):
            self.steps += 1
            return 0.1 * self.steps

    x = arr(rand(3))
    sched_f, sched_p = Schedule(), Schedule()

    def step(x, sched):
        y = x * 2
        return y * sched.lr

    f = minpy_jit.function(step)
    for _ in range(4):
        assert_same(step(x, sched_p), f(x, sched_f))
        assert sched_f.steps == sched_p.steps
    assert any("property Schedule.lr" in m for m in f.messages), f.messages


def test_a_pure_property_outside_mxnet_still_gives_python_results():
    """The same split for a property without effects: correct, the rest still compiled."""
    class Cfg:
        def __init__(self, s):
            self._s = s

        @property
        def scale(self):
            return self._s

    cfg, x = Cfg(2.0), arr(rand(3))

    def f(x):
        h = nd.relu(x * 3)
        return h * cfg.scale

    g = minpy_jit.function(f)
    for s in (2.0, 2.0, 5.0, 5.0):
        cfg._s = s
        assert_same(f(x), g(x))
    assert _core.fragment_stats()["replayed"] + _core.fragment_stats()["appended"] > 0


def test_defaults_rebound_after_decoration_are_used():
    """Footgun: default values copied when the function was compiled. Here a call uses the
    original's current `__defaults__` / `__kwdefaults__`."""
    def f(x, s=0.5, *, t=1.0):
        return x * s + t

    g = minpy_jit.function(f)
    x = arr(rand(3))
    assert_same(f(x), g(x))
    f.__defaults__ = (0.25,)
    assert_same(f(x), g(x))
    f.__kwdefaults__["t"] = 3.0
    assert_same(f(x), g(x))
    f.__kwdefaults__ = {"t": -1.0}
    assert_same(f(x), g(x))
