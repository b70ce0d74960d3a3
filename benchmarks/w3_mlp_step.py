"""W3 MLP training step: batch 64, 784-256-256-10, ReLU, softmax cross-entropy (mean), plain SGD lr 0.1.

Two forms of the same step, timed in one run:
  * Gluon + Trainer, three modes: eager, jit() (forward, backward and trainer.step inside
    one `with minpy_jit.jit():`), and the net hybridized with static_alloc=True,
    static_shape=True;
  * the NDArray form (nd.FullyConnected / nd.relu / log_softmax + pick under
    autograd.record(), loss.backward(), nd.sgd_update per weight reading w.grad), eager
    and jit().
Reports ms per step, ratios, and the peak RSS of each Gluon mode run alone in a fresh
subprocess (resource.getrusage).

    .venv/bin/python benchmarks/w3_mlp_step.py [--json out.json]
    .venv/bin/python benchmarks/w3_mlp_step.py --rss {none,eager,jit,hybrid}   # one mode, prints peak RSS
"""
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

import minpy_jit  # noqa: E402
import reference  # noqa: E402
import timing  # noqa: E402

# W3 definition (copied from the benchmark definitions)
BATCH = 64
SIZES = (784, 256, 256, 10)
LR = 0.1
RSS_STEPS = 300
MODES = ("eager", "hybrid", "jit")
ND_MODES = ("nd-eager", "nd-jit")


def make_net():
    net = nn.HybridSequential()
    with net.name_scope():
        for i, (nin, nout) in enumerate(zip(SIZES[:-1], SIZES[1:])):
            last = i == len(SIZES) - 2
            net.add(nn.Dense(nout, in_units=nin, activation=None if last else "relu"))
    return net


def make_data():
    _, _, x, labels = reference.w3_inputs()
    return nd.array(x), nd.array(labels.astype(np.float32))


class Setup:
    """A net, its Trainer and a step function for one mode; initial weights from `init`."""

    def __init__(self, mode, init=None):
        self.mode = mode
        self.net = make_net()
        self.net.initialize(mx.init.Xavier())
        if init is not None:
            for p, v in zip(self.net.collect_params().values(), init):
                p.set_data(v)
        if mode == "hybrid":
            self.net.hybridize(static_alloc=True, static_shape=True)
        self.trainer = gluon.Trainer(self.net.collect_params(), "sgd", {"learning_rate": LR})
        self.loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        self.x, self.y = make_data()

    def _step(self):
        with autograd.record():
            loss = self.loss_fn(self.net(self.x), self.y).mean()
        loss.backward()
        self.trainer.step(1)
        return loss

    def step(self):
        if self.mode == "jit":
            with minpy_jit.jit():
                loss = self._step()
        else:
            loss = self._step()
        nd.waitall()  # loss and updated weights ready
        return loss

    def params(self):
        return [p.data().asnumpy() for p in self.net.collect_params().values()]

    def check(self, losses):
        """This mode's losses and weights against the float64 reference (reference.py)."""
        p = self.params()  # weight, bias of each layer in turn
        return reference.check("W3", reference.w3_result(losses, p[0::2], p[1::2]))


class NDSetup:
    """The NDArray form of the step: the same layers as nd ops, autograd, sgd_update per weight."""

    def __init__(self, mode, init):
        self.mode = mode
        self.ws = [a.copy() for a in init]  # weight, bias of each layer in turn
        for w in self.ws:
            w.attach_grad()
        self.x, self.y = make_data()

    def _step(self):
        with autograd.record():
            h = self.x
            for i, nout in enumerate(SIZES[1:]):
                h = nd.FullyConnected(h, self.ws[2 * i], self.ws[2 * i + 1], num_hidden=nout)
                if i < len(SIZES) - 2:
                    h = nd.relu(h)
            loss = nd.mean(-nd.pick(nd.log_softmax(h), self.y))
        loss.backward()
        for w in self.ws:
            nd.sgd_update(w, w.grad, lr=LR, out=w)
        return loss

    def step(self):
        if self.mode == "nd-jit":
            with minpy_jit.jit():
                loss = self._step()
        else:
            loss = self._step()
        nd.waitall()
        return loss

    def params(self):
        return [w.asnumpy() for w in self.ws]

    def check(self, losses):
        p = self.params()
        return reference.check("W3", reference.w3_result(losses, p[0::2], p[1::2]))


def initial_weights():
    """The reference's initial weights, in the order of collect_params (weight, bias per layer)."""
    timing.seed_all()
    weights, biases, _, _ = reference.w3_inputs()
    return [nd.array(a) for wb in zip(weights, biases) for a in wb]


def rss_child(mode):
    init = initial_weights()
    if mode != "none":
        s = Setup(mode, init)
        for _ in range(RSS_STEPS):
            s.step()
    print("PEAK_RSS_KB %d" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def peak_rss_mb(mode):
    out = timing.run_child([sys.executable, os.path.abspath(__file__), "--rss", mode])
    kb = int([line for line in out.splitlines() if line.startswith("PEAK_RSS_KB")][0].split()[1])
    return kb / 1024.0


def main():
    init = initial_weights()
    setups = {m: Setup(m, init) for m in MODES}
    setups.update({m: NDSetup(m, init) for m in ND_MODES})

    # correctness, once, before timing: 3 steps from the same weights
    history = {m: [] for m in setups}
    for _ in range(reference.CHECK_STEPS):
        losses = {m: s.step().asscalar() for m, s in setups.items()}
        for m in setups:
            history[m].append(losses[m])
    checks = {m: setups[m].check(history[m]) for m in setups}
    for m, base in (("jit", "eager"), ("hybrid", "eager"), ("nd-jit", "nd-eager")):
        ref = setups[base].params()
        for a, b in zip(setups[m].params(), ref):
            assert np.allclose(a, b, rtol=1e-4, atol=1e-5), "%s weights differ from %s" % (m, base)
        assert np.isclose(losses[m], losses[base], rtol=1e-4), (m, losses)
    for a, b in zip(setups["jit"].params() + setups["nd-jit"].params(),
                    setups["eager"].params() + setups["nd-eager"].params()):
        assert np.array_equal(a, b), "jit() weights differ from eager's (bit for bit)"

    setups["jit"].step()
    setups["nd-jit"].step()
    minpy_jit.reset_stats()
    res = timing.compare({m: setups[m].step for m in MODES + ND_MODES})
    jit_stats = minpy_jit.stats()
    launches = {}  # per jit() step: compiled graphs run, MXNet autograd backward calls
    for m in ("jit", "nd-jit"):
        minpy_jit.reset_stats()
        for _ in range(20):
            setups[m].step()
        st = minpy_jit.stats()
        launches[m] = (st["executions"] / 20.0, st["backward_by_mxnet"] / 20.0)
    rss = {m: peak_rss_mb(m) for m in ("none",) + MODES}

    ms = {m: res[m].median * 1e3 for m in MODES + ND_MODES}
    print("W3 MLP training step: batch %d, %s, ReLU, softmax CE (mean), SGD lr %g; Gluon + Trainer"
          % (BATCH, "-".join(map(str, SIZES)), LR))
    timing.print_env()
    print()
    names = {"eager": "eager (Gluon + Trainer)", "hybrid": "hybridized (static_alloc+static_shape)",
             "jit": "jit() (fwd + bwd + step in one scope)"}
    names.update({"nd-eager": "eager (nd ops + autograd + sgd_update)", "nd-jit": "jit() (the same, in one scope)"})
    rows = [[names[m], "%.3f" % ms[m], "%.0f%%" % (100 * res[m].spread), "%.1f" % rss[m],
             "%+.1f" % (rss[m] - rss["none"])] for m in MODES]
    rows += [[names[m], "%.3f" % ms[m], "%.0f%%" % (100 * res[m].spread), "-", "-"] for m in ND_MODES]
    timing.table(rows, ["mode", "ms/step", "spread", "peak RSS MB", "vs setup-only"])
    print("(peak RSS: each mode alone in a fresh process, %d steps; setup-only process: %.0f MB)"
          % (RSS_STEPS, rss["none"]))
    print()
    for m, c in checks.items():
        print("%-6s vs float64 reference (%s): %s" % (m, c["tol"], reference.check_text(c)))
    print("ratio eager/jit      %s" % timing.ratio(ms["eager"], ms["jit"]))
    print("ratio hybridized/jit %s" % timing.ratio(ms["hybrid"], ms["jit"]))
    print("ratio eager/jit, NDArray form %s" % timing.ratio(ms["nd-eager"], ms["nd-jit"]))
    for m, form in (("jit", "Gluon + Trainer"), ("nd-jit", "NDArray form")):
        print("jit() launches per step, %s: %.1f compiled graphs (forward, backward and update as one graph: "
              "benchmarks/launches_per_step.py), %.1f MXNet autograd backward calls"
              % (form, launches[m][0], launches[m][1]))
    print("jit stats over the timed steps: cache_hits=%d cache_misses=%d flushes=%s executions=%d "
          "eager_replays=%d fallbacks=%s" % (jit_stats["cache_hits"], jit_stats["cache_misses"],
                                             jit_stats["flushes"], jit_stats["executions"],
                                             jit_stats["eager_replays"], jit_stats["fallbacks"]))
    timing.write_summary(timing.summary_arg(), dict(
        id="W3", workload="W3 MLP train step", unit="ms/step", eager=ms["eager"], hybrid=ms["hybrid"], jit=ms["jit"],
        checks={m: checks[m] for m in MODES}, form="Gluon + Trainer",
        extra_systems=[dict(system="%s (nd + autograd + sgd_update)" % ("MXNet eager" if m == "nd-eager"
                                                                        else "minpy_jit jit()"),
                            value=ms[m], check=checks[m]) for m in ND_MODES],
        other={"nd": dict(eager=ms["nd-eager"], jit=ms["nd-jit"])}, launches_per_step=launches,
        cache_hits=jit_stats["cache_hits"], cache_misses=jit_stats["cache_misses"],
        rss_mb={m: rss[m] for m in rss}))


if __name__ == "__main__":
    if "--rss" in sys.argv:
        rss_child(sys.argv[sys.argv.index("--rss") + 1])
    else:
        main()
