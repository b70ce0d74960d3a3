"""W4 LSTM cell loop: gluon.rnn.LSTMCell, batch 16, input 64, hidden 128, 50 steps unrolled
in a Python loop, forward only.

Modes: eager (the cell called 50 times), jit() (the same loop inside one
`with minpy_jit.jit():`), and a HybridBlock that unrolls the whole sequence,
hybridized with static_alloc=True, static_shape=True (one graph per sequence).

    .venv/bin/python benchmarks/w4_lstm.py [--json out.json]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import gluon, nd  # noqa: E402

import minpy_jit  # noqa: E402
import reference  # noqa: E402
import timing  # noqa: E402

# W4 definition (copied from the benchmark definitions)
BATCH = 16
HIDDEN = 128
INPUT = 64
T = 50


class Unrolled(gluon.HybridBlock):
    """The whole sequence as one graph."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.cell = gluon.rnn.LSTMCell(HIDDEN, input_size=INPUT)

    def hybrid_forward(self, F, x, h, c):
        _, states = self.cell.unroll(T, x, begin_state=[h, c], layout="TNC", merge_outputs=True)
        return states[0], states[1]


def main():
    timing.seed_all()
    w_ih, w_hh, b_ih, b_hh, xs_np, h0_np, c0_np = reference.w4_inputs()
    cell = gluon.rnn.LSTMCell(HIDDEN, input_size=INPUT)
    cell.initialize(mx.init.Xavier())
    for suffix, value in (("i2h_weight", w_ih), ("h2h_weight", w_hh), ("i2h_bias", b_ih), ("h2h_bias", b_hh)):
        cell.collect_params()[cell.prefix + suffix].set_data(nd.array(value))
    seq = Unrolled()
    seq.initialize()
    for name, p in cell.collect_params().items():
        suffix = name[len(cell.prefix):]
        seq.cell.collect_params()[seq.cell.prefix + suffix].set_data(p.data())
    seq.hybridize(static_alloc=True, static_shape=True)

    x_all = nd.array(xs_np)
    xs = [x_all[t].copy() for t in range(T)]  # split up front: indexing is not part of the timed loop
    h0 = nd.array(h0_np)
    c0 = nd.array(c0_np)
    nd.waitall()

    def loop():
        states = [h0, c0]
        for t in range(T):
            _, states = cell(xs[t], states)
        return states

    def eager():
        loop()[0].wait_to_read()

    def jitted():
        with minpy_jit.jit():
            states = loop()
        states[0].wait_to_read()

    def hybrid():
        seq(x_all, h0, c0)[0].wait_to_read()

    # correctness, once, before timing
    ref = [s.asnumpy() for s in loop()]
    with minpy_jit.jit():
        got = loop()
    got = [s.asnumpy() for s in got]
    hyb = [s.asnumpy() for s in seq(x_all, h0, c0)]
    for a, b, c in zip(ref, got, hyb):
        assert np.allclose(a, b, rtol=1e-5, atol=1e-6), "jit result differs from eager"
        assert np.allclose(a, c, rtol=1e-5, atol=1e-6), "hybridized result differs from eager"
    checks = {m: reference.check("W4", r) for m, r in (("eager", ref), ("hybrid", hyb), ("jit", got))}

    minpy_jit.reset_stats()
    res = timing.compare({"eager": eager, "hybrid": hybrid, "jit": jitted})
    jit_stats = minpy_jit.stats()
    ms = {m: r.median * 1e3 for m, r in res.items()}
    n_ops = jit_stats["ops_recorded"] / max(1, jit_stats["executions"])

    print("W4 LSTM cell loop: LSTMCell batch %d, input %d, hidden %d, %d steps in a Python loop, forward only"
          % (BATCH, INPUT, HIDDEN, T))
    timing.print_env()
    print()
    names = {"eager": "eager (cell called %d times)" % T,
             "hybrid": "hybridized unrolled sequence (static_alloc+static_shape)",
             "jit": "jit() around the Python loop"}
    rows = [[names[m], "%.3f" % ms[m], "%.0f%%" % (100 * res[m].spread)] for m in ("eager", "hybrid", "jit")]
    timing.table(rows, ["mode", "ms/sequence", "spread"])
    print()
    for m, c in checks.items():
        print("%-6s vs float64 reference (%s): %s" % (m, c["tol"], reference.check_text(c)))
    print("ratio eager/jit      %s" % timing.ratio(ms["eager"], ms["jit"]))
    print("ratio hybridized/jit %s" % timing.ratio(ms["hybrid"], ms["jit"]))
    print("jit stats over the timed calls: cache_hits=%d cache_misses=%d flushes=%s executions=%d "
          "ops/execution=%.0f eager_replays=%d fallbacks=%s" % (
              jit_stats["cache_hits"], jit_stats["cache_misses"], jit_stats["flushes"],
              jit_stats["executions"], n_ops, jit_stats["eager_replays"], jit_stats["fallbacks"]))
    timing.write_summary(timing.summary_arg(), dict(
        id="W4", workload="W4 LSTM cell loop", unit="ms/seq", eager=ms["eager"], hybrid=ms["hybrid"], jit=ms["jit"],
        checks=checks,
        cache_hits=jit_stats["cache_hits"], cache_misses=jit_stats["cache_misses"]))


if __name__ == "__main__":
    main()
