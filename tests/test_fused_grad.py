"""Fused units with gradients: elementwise chains recorded under autograd.record() run as
_minpy_fused_elemwise, whose backward is a fused program (cpp/kernels/fused_grad.cc).

- every op's derivative against eager MXNet on special values (inf, NaN, +-0, denormals):
  bit for bit (the derivative repeats MXNet's float ops; through tanh/sigmoid/exp/log, on our
  forward value, which is libm's);
- random programs recorded under jit(): gradients equal eager's bit for bit; with
  transcendentals also close to float64 central differences;
- MXNet's requests: an input without gradient (kNullOp), grad_req='add' (kAddTo), outputs also
  read inside the unit, values with more than two gradient contributions (not fused).
"""
import contextlib

import numpy as np
import pytest
from mxnet import autograd, nd

import minpy_jit
from minpy_jit import _core
from conftest import arr, run_both

F32 = np.float32
SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 1e-40, -1e-40, 30.0, -30.0,
                     np.inf, -np.inf, np.nan, 1e30, -1e30, 19.0, 21.0, 0.3, -0.3], F32)


def bits_equal(got, want):
    got, want = np.asarray(got, F32), np.asarray(want, F32)
    assert got.shape == want.shape
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), "first mismatch at %s: got %r want %r" % (
        np.argwhere(~same)[0], got[~same][:4], want[~same][:4])


def special_pairs(seed=0, n=630):
    """x and ograd: every pair of special values, then random ones."""
    rs = np.random.RandomState(seed)
    x = np.concatenate([np.repeat(SPECIALS, len(SPECIALS)), rs.standard_normal(n).astype(F32) * 3])
    g = np.concatenate([np.tile(SPECIALS, len(SPECIALS)), rs.standard_normal(n).astype(F32)])
    return x.reshape(-1, 21), g.reshape(-1, 21)


@pytest.fixture(autouse=True)
def many_graphs_per_site():
    """Every test compiles new graphs at the same scope sites (grads(), run()): no recompile
    limit, and no scalar made a graph input because another test had another value there."""
    minpy_jit.clear_cache()
    old = minpy_jit.config()["recompile_limit"]
    minpy_jit.config(recompile_limit=10 ** 9)
    yield
    minpy_jit.config(recompile_limit=old)


def grads(fn, xs, g, use_jit):
    """Outputs and input gradients of fn(*xs) with head gradient g, eagerly or under jit().

    Under jit() the recorded forward runs when backward() is called (the head gradient is made
    before the scope: made inside, it would flush the forward first, and a recorded graph
    flushed before its backward is known runs op by op, unfused), and MXNet's autograd runs the
    backward (backward_in_graph off), so that it runs the fused unit's backward node."""
    xs = [arr(x) for x in xs]
    for x in xs:
        x.attach_grad()
    head = arr(np.asarray(g, F32))
    scope = minpy_jit.jit() if use_jit else contextlib.nullcontext()
    old = minpy_jit.config()["backward_in_graph"]
    minpy_jit.config(backward_in_graph=False)
    try:
        with scope:
            with autograd.record():
                y = fn(*xs)
            y.backward(head)
    finally:
        minpy_jit.config(backward_in_graph=old)
    return y.asnumpy(), [x.grad.asnumpy() for x in xs]


def fused_kernels(fn, *args):
    minpy_jit.reset_stats()
    out = fn(*args)
    return out, minpy_jit.stats()["fused_kernels"]


# ------------------------------------------------------------------ one op at a time

ARITHMETIC = {  # each applied after * 1.0 so that the unit has two ops (one cheap op is not fused)
    "relu": nd.relu, "Activation relu": lambda x: nd.Activation(x, act_type="relu"),
    "abs": nd.abs, "negative": nd.negative, "square": nd.square, "sqrt": nd.sqrt,
    "rsqrt": nd.rsqrt, "reciprocal": nd.reciprocal, "softsign": nd.softsign,
    "Activation softsign": lambda x: nd.Activation(x, act_type="softsign"),
    "mul_scalar": lambda x: x * 0.3, "div_scalar": lambda x: x / 0.3, "plus_scalar": lambda x: x + 0.3,
    "minus_scalar": lambda x: x - 0.3, "rminus_scalar": lambda x: 0.3 - x, "rdiv_scalar": lambda x: 0.3 / x,
    "clip": lambda x: nd.clip(x, -0.5, 2.0),
}


@pytest.mark.parametrize("name", sorted(ARITHMETIC))
def test_arithmetic_op_gradient_is_bit_exact(name):
    f = ARITHMETIC[name]
    x, g = special_pairs()
    fn = lambda a: f(a * 1.0)  # noqa: E731
    ye, (ge,) = grads(fn, [x], g, False)
    (yj, (gj,)), n = fused_kernels(grads, fn, [x], g, True)
    assert n >= 1
    bits_equal(yj, ye)
    bits_equal(gj, ge)


BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b, "elemwise_mul": nd.elemwise_mul, "broadcast_sub": nd.broadcast_sub}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_op_gradients_are_bit_exact(name):
    f = BINARY[name]
    x, g = special_pairs(1)
    y = np.roll(x, 7)
    # negative, not "* 1.0": a scalar seen with two values at one trace position would become
    # a graph input (a broadcast, not fused); this test is about the binary op
    fn = lambda a, b: f(nd.negative(a), nd.negative(b))  # noqa: E731
    ye, ge = grads(fn, [x, y], g, False)
    (yj, gj), n = fused_kernels(grads, fn, [x, y], g, True)
    assert n >= 1
    bits_equal(yj, ye)
    for a, b in zip(gj, ge):
        bits_equal(a, b)


TRANSCENDENTAL = {
    # name: (op, MXNet's derivative as a function of x, y = our forward value, ograd)
    "tanh": (nd.tanh, lambda x, y, g: g * (F32(1) - y * y)),
    "sigmoid": (nd.sigmoid, lambda x, y, g: g * (y * (F32(1) - y))),
    "exp": (nd.exp, lambda x, y, g: g * y),
    "log": (nd.log, lambda x, y, g: g * (F32(1) / x)),
}


@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL))
def test_transcendental_gradient_is_mxnets_formula_on_our_value(name):
    """Our forward value is eager's, bit for bit (libm's tanhf/expf/logf); the gradient is
    MXNet's backward formula applied to it, and eager's, bit for bit."""
    f, formula = TRANSCENDENTAL[name]
    x, g = special_pairs(2)
    x = x * F32(0.25)  # keep most of it where exp does not overflow
    ye, (ge,) = grads(f, [x], g, False)
    (yj, (gj,)), n = fused_kernels(grads, f, [x], g, True)
    assert n == 1
    with np.errstate(all="ignore"):
        bits_equal(gj, formula(x, yj, g))
    bits_equal(yj, ye)
    bits_equal(gj, ge)


@pytest.mark.parametrize("act", ["tanh", "sigmoid", "softrelu"])
def test_activation_transcendentals_are_eagers(act):
    """Activation's tanh, sigmoid and softrelu run through oneDNN in MXNet's wheel, whose
    results differ from libm's in the last bits. tanh and sigmoid are fused as oneDNN's own
    algorithms (onednn_eltwise.h; forward, and the backward from the input), softrelu stays
    MXNet's op; values and gradients are eager's, bit for bit, on every pair of special values."""
    x, g = special_pairs(3)
    f = lambda a: nd.Activation(a, act_type=act)  # noqa: E731
    ye, (ge,) = grads(f, [x], g, False)
    (yj, (gj,)), n = fused_kernels(grads, f, [x], g, True)
    assert n == (0 if act == "softrelu" else 1)
    assert _core.activation_instr(act, x.shape, True) == {"tanh": "tanh_dnnl", "sigmoid": "sigmoid_dnnl"}.get(act)
    bits_equal(yj, ye)
    bits_equal(gj, ge)


# ------------------------------------------------------------------ random programs

# looked up at call time (numpy_program swaps nd's functions for float64 ones)
CHEAP = [lambda a: a * 0.7, lambda a: a + 0.25, lambda a: 1.5 - a, lambda a: a / 1.3,
         lambda a: nd.negative(a), lambda a: nd.square(a), lambda a: nd.relu(a), lambda a: nd.abs(a),
         lambda a: nd.clip(a, -1.0, 1.2)]
HEAVY = [lambda a: nd.tanh(a), lambda a: nd.sigmoid(a), lambda a: nd.exp(a * 0.1)]
BIN = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b]


def random_program(seed, heavy):
    """fn(x, y) of 6-14 ops in which no value is read more than twice (see fuse.cc)."""
    rs = np.random.RandomState(seed)
    steps = []
    for _ in range(rs.randint(6, 15)):
        if rs.rand() < 0.35:
            steps.append(("bin", rs.randint(len(BIN))))
        else:
            pool = CHEAP + (HEAVY if heavy else [])
            steps.append(("un", rs.randint(len(pool))))

    def fn(x, y):
        pool = CHEAP + (HEAVY if heavy else [])
        a, b = x, y  # two live values, each consumed once per step
        for kind, k in steps:
            if kind == "bin":
                a, b = BIN[k](a, b), a * 0.5
            else:
                a = pool[k](a)
        return a + b
    return fn


@pytest.mark.parametrize("seed", range(12))
def test_random_arithmetic_programs_bit_exact(seed):
    fn = random_program(seed, heavy=False)
    rs = np.random.RandomState(100 + seed)
    x, y, g = (rs.standard_normal((7, 33)).astype(F32) for _ in range(3))
    ye, ge = grads(fn, [x, y], g, False)
    (yj, gj), n = fused_kernels(grads, fn, [x, y], g, True)
    assert n >= 1
    bits_equal(yj, ye)
    for a, b in zip(gj, ge):
        bits_equal(a, b)


def numpy_program(fn):
    """fn run on float64 numpy arrays, by feeding it an object with NDArray's arithmetic."""
    class V:
        def __init__(self, v):
            self.v = np.asarray(v, np.float64)
        __add__ = lambda s, o: V(s.v + (o.v if isinstance(o, V) else o))  # noqa: E731
        __radd__ = __add__
        __sub__ = lambda s, o: V(s.v - (o.v if isinstance(o, V) else o))  # noqa: E731
        __rsub__ = lambda s, o: V((o.v if isinstance(o, V) else o) - s.v)  # noqa: E731
        __mul__ = lambda s, o: V(s.v * (o.v if isinstance(o, V) else o))  # noqa: E731
        __rmul__ = __mul__
        __truediv__ = lambda s, o: V(s.v / (o.v if isinstance(o, V) else o))  # noqa: E731
    funcs = dict(negative=lambda a: V(-a.v), square=lambda a: V(a.v * a.v), relu=lambda a: V(np.maximum(a.v, 0)),
                 abs=lambda a: V(np.abs(a.v)), clip=lambda a, lo, hi: V(np.clip(a.v, lo, hi)),
                 tanh=lambda a: V(np.tanh(a.v)), sigmoid=lambda a: V(1 / (1 + np.exp(-a.v))),
                 exp=lambda a: V(np.exp(a.v)))
    saved = {k: getattr(nd, k) for k in funcs}
    def run(x, y):
        for k, f in funcs.items():
            setattr(nd, k, f)
        try:
            return fn(V(x), V(y)).v
        finally:
            for k, f in saved.items():
                setattr(nd, k, f)
    return run


@pytest.mark.parametrize("seed", range(8))
def test_random_programs_with_transcendentals(seed):
    """Against eager, bit for bit, and against float64 central differences of the same
    program (sum(g * fn) along a random direction)."""
    fn = random_program(1000 + seed, heavy=True)
    rs = np.random.RandomState(200 + seed)
    x, y, g = (rs.standard_normal((5, 40)).astype(F32) for _ in range(3))
    ye, ge = grads(fn, [x, y], g, False)
    (yj, gj), n = fused_kernels(grads, fn, [x, y], g, True)
    assert n >= 1
    bits_equal(yj, ye)
    for a, b in zip(gj, ge):
        bits_equal(a, b)
    f64 = numpy_program(fn)
    dx, dy = rs.standard_normal(x.shape), rs.standard_normal(y.shape)
    h = 1e-6
    obj = lambda t: (g * f64(x + t * dx, y + t * dy)).sum()  # noqa: E731
    # kinks of relu/abs/clip: away from them the difference quotient is the directional derivative
    fd = (obj(h) - obj(-h)) / (2 * h)
    analytic = (gj[0].astype(np.float64) * dx).sum() + (gj[1].astype(np.float64) * dy).sum()
    assert abs(fd - analytic) <= 1e-3 * (abs(fd) + np.abs(gj[0] * dx).sum() + np.abs(gj[1] * dy).sum())


# ------------------------------------------------------------------ how MXNet asks for gradients

def test_input_without_gradient_and_grad_req_add():
    """A fused unit reading a leaf with grad_req='add' accumulates (MXNet's kAddTo reaches
    the runtime's _copy, not our kernel), one without a gradient is left alone (kNullOp)."""
    a, b = (arr(np.random.RandomState(s).standard_normal((6, 9)).astype(F32)) for s in (5, 6))

    def run(use_jit):
        x, y = a.copy(), b.copy()
        x.attach_grad(grad_req="add")
        scope = minpy_jit.jit() if use_jit else contextlib.nullcontext()
        with scope:
            for _ in range(3):
                with autograd.record():
                    z = nd.tanh(x * 0.5 + y) * 2.0
                z.backward()
        return x.grad.asnumpy()
    eager = run(False)
    minpy_jit.reset_stats()
    jitted = run(True)
    assert minpy_jit.stats()["fused_kernels"] >= 1
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-6)
    single = a.copy()
    single.attach_grad()
    with autograd.record():
        z = nd.tanh(single * 0.5 + b) * 2.0
    z.backward()
    np.testing.assert_allclose(jitted, 3 * single.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_output_also_read_inside_the_unit():
    """c = f*c0 + i*g is an output of the unit and read by h = o*c inside it (an LSTM
    cell's state): its gradient is the head's plus the internal one."""
    def fn(f, c0, i, o):
        c = f * c0 + i * 0.5
        h = o * c * 2.0
        return c, h

    rs = np.random.RandomState(7)
    xs = [rs.standard_normal((4, 10)).astype(F32) for _ in range(4)]
    gc, gh = rs.standard_normal((4, 10)).astype(F32), rs.standard_normal((4, 10)).astype(F32)

    def run(use_jit):
        arrays = [arr(x) for x in xs]
        for x in arrays:
            x.attach_grad()
        # Made before the scope: made inside, they would flush the forward before the backward,
        # which then runs op by op (`o` does not lead to `c`: a backward from `c` alone must
        # leave o.grad as it was, tests/test_backward_reach.py).
        head_grads = [nd.array(gc), nd.array(gh)]
        scope = minpy_jit.jit() if use_jit else contextlib.nullcontext()
        with scope:
            with autograd.record():
                c, h = fn(*arrays)
            autograd.backward([c, h], head_grads)
        return [c.asnumpy(), h.asnumpy()] + [x.grad.asnumpy() for x in arrays]
    eager = run(False)
    minpy_jit.reset_stats()
    jitted = run(True)
    assert minpy_jit.stats()["fused_kernels"] == 1
    for a, b in zip(jitted, eager):
        bits_equal(a, b)


def test_value_with_three_gradient_contributions_is_not_fused_into_one_sum():
    """x read three times: MXNet sums three contributions in its graph's order, which a fused
    unit could not promise, so those reads stay MXNet ops; results equal eager bit for bit."""
    def fn(x):
        x.attach_grad()
        with autograd.record():
            y = (x * 0.3 + 1.0) * (x - 0.5) + x * x * 0.0 + nd.square(x)
        y.backward()
        return y, x.grad

    res = run_both(fn, arr(np.random.RandomState(8).standard_normal((5, 5)).astype(F32)))
    for a, b in zip(res.jitted, res.eager):
        bits_equal(a.asnumpy(), b.asnumpy())
