"""Fixed inputs of the workloads W1-W5 and their float64 NumPy references.

Every benchmark imports this: MXNet's scripts (in .venv, numpy 1.23) and the peers' (torch,
JAX, in .venv-bench, numpy 2.x), so it needs numpy alone. Each system checks its result of the
same float32 inputs made here (RandomState streams, which numpy keeps stable across versions)
against the same computation done in float64 here: W1, W2 and W4 compare the output, W3 the loss
of each of CHECK_STEPS training steps and the weights after them, W5 the weights after
CHECK_STEPS updates. check() returns a dict the summary prints; a failed check is shown, never
raised away.

Sizes and constants copied from the benchmark definitions (the project never imports them).
"""
import numpy as np

SEED = 0
CHECK_STEPS = 3

# W1 small-op chain: x (32, 32); REPS times x = relu(x * MUL + ADD)
W1 = dict(shape=(32, 32), reps=100, mul=1.01, add=0.5)
W1["n_ops"] = 3 * W1["reps"]
# W2 elementwise chain: x (1M,); REPS times x = tanh(x * MUL + ADD) * sigmoid(x)
W2 = dict(n=1_000_000, reps=10, mul=0.9, add=0.1)
W2["n_ops"] = 5 * W2["reps"]
W2["bytes"] = 2 * 4 * W2["n"]  # one read and one write of x: what a fused chain must move
# W3 MLP training step: softmax cross-entropy (mean over the batch), plain SGD
W3 = dict(batch=64, sizes=(784, 256, 256, 10), lr=0.1)
# W4 LSTM cell loop, forward only; gate order i, f, g, o (MXNet LSTMCell and torch LSTMCell alike)
W4 = dict(batch=16, input=64, hidden=128, T=50)
# W5 SGD with momentum over many small parameters.
#   torch form: buf = mom * buf + g; w -= lr * buf.  MXNet form: v = mom * v - lr * g; w += v
#   (the same trajectory with v = -lr * buf)
W5 = dict(n_params=200, shape=(64, 64), lr=0.1, momentum=0.9)

NAMES = {"W1": "W1 small-op chain", "W2": "W2 elementwise chain", "W3": "W3 MLP train step",
         "W4": "W4 LSTM cell loop", "W5": "W5 200x SGD-momentum"}
# The unit each workload is reported in, and how many of them one call is.
UNITS = {"W1": "us/op", "W2": "ms/call", "W3": "ms/step", "W4": "ms/seq", "W5": "ms/update"}


def per_unit(workload, seconds_per_call):
    """A per-call time in seconds -> the workload's reporting unit."""
    if workload == "W1":
        return seconds_per_call / W1["n_ops"] * 1e6
    return seconds_per_call * 1e3


# Tolerances (rtol, atol) of a float32 result against float64, elementwise
# |got - ref| <= atol + rtol * |ref|. Each op rounds to float32 (2^-24 relative), the
# transcendental ones within a few ulp; errors add up over the chain, so the bounds are ~100 ulp
# of the values involved: a real bug (a wrong op, a missed step, a wrong gate) is off by far more.
TOLERANCES = {
    "W1": (1e-5, 1e-5),   # 300 roundings, values up to ~120
    "W2": (1e-5, 1e-6),   # 50 ops, |x| < 1, tanh/sigmoid within a few ulp
    "W3": (1e-4, 1e-5),   # float32 matmuls over 784 terms, softmax; losses and weights after 3 steps
    "W4": (1e-5, 1e-5),   # 50 steps of matmuls over 192 terms and gates
    "W5": (1e-6, 1e-6),   # three momentum updates, |w| <= 1
}


# ----------------------------------------------------------------------------------- inputs

def _rng(offset):
    return np.random.RandomState(SEED + offset)


def w1_input():
    return _rng(1).uniform(-1, 1, W1["shape"]).astype(np.float32)


def w2_input():
    return _rng(2).uniform(-1, 1, W2["n"]).astype(np.float32)


def w3_inputs():
    """(weights, biases, x, labels): weights (out, in) as Gluon Dense and torch Linear store them,
    Xavier-uniform; small nonzero biases; labels int64 in [0, 10)."""
    rng = _rng(3)
    sizes = W3["sizes"]
    weights, biases = [], []
    for nin, nout in zip(sizes[:-1], sizes[1:]):
        a = np.sqrt(6.0 / (nin + nout))
        weights.append(rng.uniform(-a, a, (nout, nin)).astype(np.float32))
        biases.append(rng.uniform(-0.05, 0.05, nout).astype(np.float32))
    x = rng.uniform(-1, 1, (W3["batch"], sizes[0])).astype(np.float32)
    labels = rng.randint(0, sizes[-1], W3["batch"]).astype(np.int64)
    return weights, biases, x, labels


def w4_inputs():
    """(w_ih (4H, I), w_hh (4H, H), b_ih, b_hh, xs (T, B, I), h0, c0); weights uniform in
    +-1/sqrt(H) (torch's LSTMCell default), states zero."""
    rng = _rng(4)
    B, I, H, T = W4["batch"], W4["input"], W4["hidden"], W4["T"]
    k = 1.0 / np.sqrt(H)
    w_ih = rng.uniform(-k, k, (4 * H, I)).astype(np.float32)
    w_hh = rng.uniform(-k, k, (4 * H, H)).astype(np.float32)
    b_ih = rng.uniform(-k, k, 4 * H).astype(np.float32)
    b_hh = rng.uniform(-k, k, 4 * H).astype(np.float32)
    xs = rng.uniform(-1, 1, (T, B, I)).astype(np.float32)
    zeros = np.zeros((B, H), np.float32)
    return w_ih, w_hh, b_ih, b_hh, xs, zeros, zeros.copy()


def w5_inputs():
    """(weights, grads): N_PARAMS arrays each; momentum buffers start at zero."""
    rng = np.random.RandomState(SEED)
    n, shape = W5["n_params"], W5["shape"]
    ws = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(n)]
    gs = [rng.uniform(-1, 1, shape).astype(np.float32) * 1e-3 for _ in range(n)]
    return ws, gs


# ------------------------------------------------------------------------- float64 references

def _f64(a):
    return np.asarray(a, dtype=np.float64)


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def w1_reference(x):
    x = _f64(x)
    for _ in range(W1["reps"]):
        x = np.maximum(x * W1["mul"] + W1["add"], 0.0)
    return x


def w2_reference(x):
    x = _f64(x)
    for _ in range(W2["reps"]):
        x = np.tanh(x * W2["mul"] + W2["add"]) * _sigmoid(x)
    return x


def w3_reference(weights, biases, x, labels, steps=CHECK_STEPS):
    """`steps` SGD steps on the same batch. Returns (losses, weights, biases) in float64."""
    ws = [_f64(w) for w in weights]
    bs = [_f64(b) for b in biases]
    x = _f64(x)
    n = x.shape[0]
    onehot = np.zeros((n, W3["sizes"][-1]))
    onehot[np.arange(n), labels] = 1.0
    losses = []
    for _ in range(steps):
        acts = [x]
        for i, (w, b) in enumerate(zip(ws, bs)):
            z = acts[-1] @ w.T + b
            acts.append(z if i == len(ws) - 1 else np.maximum(z, 0.0))
        z = acts[-1]
        zmax = z.max(axis=1, keepdims=True)
        logp = z - zmax - np.log(np.exp(z - zmax).sum(axis=1, keepdims=True))
        losses.append(-(logp * onehot).sum() / n)
        dz = (np.exp(logp) - onehot) / n
        for i in reversed(range(len(ws))):
            gw = dz.T @ acts[i]
            gb = dz.sum(axis=0)
            if i:
                dz = (dz @ ws[i]) * (acts[i] > 0)
            ws[i] = ws[i] - W3["lr"] * gw
            bs[i] = bs[i] - W3["lr"] * gb
    return losses, ws, bs


def w4_reference(w_ih, w_hh, b_ih, b_hh, xs, h, c):
    """Final (h, c) after T steps."""
    w_ih, w_hh, b = _f64(w_ih), _f64(w_hh), _f64(b_ih) + _f64(b_hh)
    h, c = _f64(h), _f64(c)
    H = W4["hidden"]
    for x in _f64(xs):
        gates = x @ w_ih.T + h @ w_hh.T + b
        i, f = _sigmoid(gates[:, :H]), _sigmoid(gates[:, H:2 * H])
        g, o = np.tanh(gates[:, 2 * H:3 * H]), _sigmoid(gates[:, 3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
    return h, c


def w5_reference(ws, gs, steps=CHECK_STEPS):
    """Weights after `steps` momentum updates with the same gradients."""
    out = []
    for w, g in zip(ws, gs):
        w, g = _f64(w), _f64(g)
        buf = np.zeros_like(w)
        for _ in range(steps):
            buf = W5["momentum"] * buf + g
            w = w - W5["lr"] * buf
        out.append(w)
    return out


def w5_adam_reference(ws, gs, lr, steps=CHECK_STEPS, beta1=0.9, beta2=0.999, eps=1e-8):
    """Weights after `steps` of MXNet 1.9.1's Adam (optimizer.Adam: bias correction folded into
    the learning rate, lr * sqrt(1 - beta2^t) / (1 - beta1^t); then adam_update) with the same
    gradients: W5's form C, Trainer('adam')."""
    out = []
    for w, g in zip(ws, gs):
        w, g = _f64(w), _f64(g)
        mean, var = np.zeros_like(w), np.zeros_like(w)
        for t in range(1, steps + 1):
            lr_t = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
            mean = beta1 * mean + (1 - beta1) * g
            var = beta2 * var + (1 - beta2) * g * g
            w = w - lr_t * mean / (np.sqrt(var) + eps)
        out.append(w)
    return out


def reference(workload):
    """The float64 reference result(s) of `workload` for the fixed inputs above: an array for
    W1 and W2, a list of arrays for W3 (as w3_result orders them), W4 ([h, c]) and W5."""
    if workload == "W1":
        return w1_reference(w1_input())
    if workload == "W2":
        return w2_reference(w2_input())
    if workload == "W3":
        return w3_result(*w3_reference(*w3_inputs()))
    if workload == "W4":
        return list(w4_reference(*w4_inputs()))
    if workload == "W5":
        return w5_reference(*w5_inputs())
    raise KeyError(workload)


# ------------------------------------------------------------------------------------ checks

def w3_result(losses, weights, biases):
    """A W3 result in the order reference('W3') has: losses, then weights, then biases."""
    return [np.array(losses, dtype=np.float64)] + list(weights) + list(biases)


def check(workload, got, ref=None):
    """Compare a system's float32 result (an array or a list of arrays, as reference() gives)
    with the float64 reference. Returns {ok, max_abs, max_excess, tol, detail}; max_excess is the
    largest |got - ref| / (atol + rtol |ref|), <= 1 passes."""
    if ref is None:
        ref = reference(workload)
    rtol, atol = TOLERANCES[workload]
    gots = got if isinstance(got, (list, tuple)) else [got]
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    tol = "rtol %g atol %g" % (rtol, atol)
    if len(gots) != len(refs):
        return dict(ok=False, max_abs=None, max_excess=None, tol=tol,
                    detail="%d arrays, reference has %d" % (len(gots), len(refs)))
    max_abs, max_excess, detail = 0.0, 0.0, ""
    for k, (g, r) in enumerate(zip(gots, refs)):
        g = np.asarray(g, dtype=np.float64)
        if g.shape != r.shape:
            return dict(ok=False, max_abs=None, max_excess=None, tol=tol,
                        detail="array %d: shape %s, reference %s" % (k, g.shape, r.shape))
        if not np.all(np.isfinite(g)):
            return dict(ok=False, max_abs=None, max_excess=None, tol=tol,
                        detail="array %d: %d non-finite values" % (k, int((~np.isfinite(g)).sum())))
        err = np.abs(g - r)
        excess = err / (atol + rtol * np.abs(r))
        j = int(np.argmax(excess))
        if excess.flat[j] > max_excess:
            max_excess = float(excess.flat[j])
            detail = "worst: array %d index %s got %.9g ref %.9g" % (
                k, np.unravel_index(j, r.shape) if r.shape else (), g.flat[j], r.flat[j])
        max_abs = max(max_abs, float(err.max()) if err.size else 0.0)
    return dict(ok=bool(max_excess <= 1.0), max_abs=max_abs, max_excess=max_excess, tol=tol, detail=detail)


def check_text(c):
    """One-line form of a check() result."""
    if c is None:
        return "not checked"
    if c["max_excess"] is None:
        return "FAIL: %s" % c["detail"]
    return "%s (max |err| %.2g, %.2f of tol)" % ("ok" if c["ok"] else "FAIL", c["max_abs"], c["max_excess"])
