"""JAX on the workloads W1-W5 with jax.jit (and lax.scan for W4), written as a JAX user would.

Runs in .venv-bench (see requirements-bench.txt), one workload per process; run_all.py starts it.
Inputs and initial weights come from reference.py, and every system's result of them is checked
against the float64 reference before timing. Every timed call ends with
`jax.block_until_ready` on its result. The first call of a jitted function (tracing and XLA
compilation, outside the timed region) is reported as compile seconds. Training state is passed
in and returned (functional updates), with the old buffers donated to the new ones.

    .venv-bench/bin/python benchmarks/peer_jax.py --workload W3 [--json out.json]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import peer_common  # noqa: E402
import reference  # noqa: E402
from peer_common import Row, first_call_seconds  # noqa: E402

R = reference


def ready(tree):
    return jax.block_until_ready(tree)


def as_numpy(tree):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(tree)]


# ------------------------------------------------------------------------------------- W1, W2

def w1_chain(x):
    for _ in range(R.W1["reps"]):
        x = jax.nn.relu(x * R.W1["mul"] + R.W1["add"])
    return x


def w2_chain(x):
    for _ in range(R.W2["reps"]):
        x = jnp.tanh(x * R.W2["mul"] + R.W2["add"]) * jax.nn.sigmoid(x)
    return x


def chain_builders(workload, chain, x_np):
    def build():
        x = jnp.asarray(x_np)
        fn = jax.jit(chain)
        secs, y = first_call_seconds(lambda: ready(fn(x)))
        return Row("JAX jit", lambda: ready(fn(x)), compile_s=secs, check=R.check(workload, np.asarray(y)))

    return [("JAX jit", build)]


# ------------------------------------------------------------------------------------------ W3

def w3_params():
    weights, biases, x, labels = R.w3_inputs()
    # (in, out) weights, as a JAX MLP is usually written (x @ w + b)
    params = [(jnp.asarray(w.T), jnp.asarray(b)) for w, b in zip(weights, biases)]
    return params, jnp.asarray(x), jnp.asarray(labels.astype(np.int32))


def mlp(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, labels):
    logp = jax.nn.log_softmax(mlp(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def sgd_step(params, x, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
    params = jax.tree_util.tree_map(lambda p, g: p - R.W3["lr"] * g, params, grads)
    return params, loss


def w3_builders():
    def build():
        params, x, labels = w3_params()
        step = jax.jit(sgd_step, donate_argnums=0)
        state = {"params": params}

        def call():
            state["params"], loss = step(state["params"], x, labels)
            return ready((state["params"], loss))

        secs, (_, loss0) = first_call_seconds(call)
        losses = [float(loss0)] + [float(call()[1]) for _ in range(R.CHECK_STEPS - 1)]
        p = state["params"]
        got = R.w3_result(losses, [np.asarray(w).T for w, _ in p], [np.asarray(b) for _, b in p])
        return Row("JAX jit", call, compile_s=secs, check=R.check("W3", got),
                   note="one jitted step: jax.value_and_grad of the loss and the SGD update (tree_map), "
                        "params donated")

    return [("JAX jit", build)]


# ------------------------------------------------------------------------------------------ W4

def lstm_cell(p, x, h, c):
    gates = x @ p["w_ih"].T + p["b_ih"] + h @ p["w_hh"].T + p["b_hh"]
    i, f, g, o = jnp.split(gates, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return h, c


def lstm_unrolled(p, xs, h, c):
    for x in xs:
        h, c = lstm_cell(p, x, h, c)
    return h, c


def lstm_scan(p, xs, h, c):
    def body(hc, x):
        return lstm_cell(p, x, *hc), None

    (h, c), _ = lax.scan(body, (h, c), xs)
    return h, c


def w4_builders():
    w_ih, w_hh, b_ih, b_hh, xs_np, h0_np, c0_np = R.w4_inputs()
    p = {"w_ih": jnp.asarray(w_ih), "w_hh": jnp.asarray(w_hh), "b_ih": jnp.asarray(b_ih),
         "b_hh": jnp.asarray(b_hh)}
    xs = jnp.asarray(xs_np)
    x_list = [jnp.asarray(x) for x in xs_np]  # split up front, as the MXNet script does
    h0, c0 = jnp.asarray(h0_np), jnp.asarray(c0_np)

    def whole(name, seq, xs_arg, note):
        def build():
            fn = jax.jit(seq)
            secs, hc = first_call_seconds(lambda: ready(fn(p, xs_arg, h0, c0)))
            return Row(name, lambda: ready(fn(p, xs_arg, h0, c0)), compile_s=secs,
                       check=R.check("W4", as_numpy(hc)), note=note)
        return name, build

    def cell_loop():
        cell = jax.jit(lstm_cell)

        def run():
            h, c = h0, c0
            for x in x_list:
                h, c = cell(p, x, h, c)
            return ready((h, c))

        secs, hc = first_call_seconds(run)
        return Row("JAX jit (cell)", run, compile_s=secs, check=R.check("W4", as_numpy(hc)),
                   note="a jitted cell called %d times from the Python loop" % R.W4["T"])

    return [whole("JAX jit (unrolled)", lstm_unrolled, x_list,
                  "jax.jit of the function holding the Python loop (%d steps traced)" % R.W4["T"]),
            whole("JAX lax.scan", lstm_scan, xs, "jax.jit of lax.scan over the sequence"),
            ("JAX jit (cell)", cell_loop)]


# ------------------------------------------------------------------------------------------ W5

def momentum_update(ws, bufs, gs):
    """What optax.sgd(lr, momentum) computes: buf = mom * buf + g; w -= lr * buf."""
    bufs = jax.tree_util.tree_map(lambda b, g: R.W5["momentum"] * b + g, bufs, gs)
    ws = jax.tree_util.tree_map(lambda w, b: w - R.W5["lr"] * b, ws, bufs)
    return ws, bufs


def w5_builders():
    def build():
        ws_np, gs_np = R.w5_inputs()
        state = {"ws": [jnp.asarray(w) for w in ws_np], "bufs": [jnp.zeros(R.W5["shape"]) for _ in ws_np]}
        gs = [jnp.asarray(g) for g in gs_np]
        update = jax.jit(momentum_update, donate_argnums=(0, 1))

        def call():
            state["ws"], state["bufs"] = update(state["ws"], state["bufs"], gs)
            return ready(state["ws"])

        secs, _ = first_call_seconds(call)
        for _ in range(R.CHECK_STEPS - 1):
            call()
        return Row("JAX jit", call, compile_s=secs, check=R.check("W5", as_numpy(state["ws"])),
                   note="one jitted update over the list of %d weights (tree_map), weights and "
                        "momenta donated" % R.W5["n_params"])

    return [("JAX jit", build)]


def main():
    workload = peer_common.workload_arg()
    builders = {"W1": lambda: chain_builders("W1", w1_chain, R.w1_input()),
                "W2": lambda: chain_builders("W2", w2_chain, R.w2_input()),
                "W3": w3_builders, "W4": w4_builders, "W5": w5_builders}[workload]()
    env = peer_common.env_lines("jax %s (%s), numpy %s" % (jax.__version__, jax.devices()[0].platform,
                                                              np.__version__))
    env.append("threads: XLA_FLAGS=%s" % os.environ.get("XLA_FLAGS", "(unset: XLA's CPU pool over all cores)"))
    peer_common.run(workload, builders, env)


if __name__ == "__main__":
    main()
