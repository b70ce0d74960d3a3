"""W1 small-op chain (overhead-bound): x (32, 32); 100 times x = relu(x * 1.01 + 0.5) -> 300 ops.

Reports µs per op for eager MXNet, jit() cold (first call of a structure, compile
included: the compile cache is cleared before each cold call), jit() steady state
and a Gluon HybridBlock hybridized with static_alloc=True, static_shape=True.
Also: recording overhead per op (time to record the 300 ops under jit(), without
the flush, minus MXNet's own Python wrapper cost) and the cold compile ms.

    .venv/bin/python benchmarks/w1_small_ops.py [--json out.json]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mxnet.ndarray.register as _register  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import gluon, nd  # noqa: E402

import minpy_jit  # noqa: E402
import reference  # noqa: E402
import timing  # noqa: E402

# W1 definition (copied from the benchmark definitions)
SHAPE = (32, 32)
REPS = 100
MUL = 1.01
ADD = 0.5
N_OPS = REPS * 3  # _mul_scalar, _plus_scalar, relu


def chain(x):
    for _ in range(REPS):
        x = nd.relu(x * MUL + ADD)
    return x


class Chain(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        for _ in range(REPS):
            x = F.relu(x * MUL + ADD)
        return x


def main():
    timing.seed_all()
    x0 = nd.array(reference.w1_input())
    x0.wait_to_read()

    def eager():
        chain(x0).wait_to_read()

    def jitted():
        with minpy_jit.jit():
            y = chain(x0)
        y.wait_to_read()

    net = Chain()
    net.hybridize(static_alloc=True, static_shape=True)

    def hybrid():
        net(x0).wait_to_read()

    # correctness, once, before timing
    ref = chain(x0).asnumpy()
    with minpy_jit.jit():
        y = chain(x0)
    assert np.allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-5), "jit result differs from eager"
    assert np.allclose(net(x0).asnumpy(), ref, rtol=1e-5, atol=1e-5), "hybridized result differs"
    # every mode against the float64 reference (reported in run_all's summary)
    checks = {"eager": reference.check("W1", ref), "hybrid": reference.check("W1", net(x0).asnumpy()),
              "jit": reference.check("W1", y.asnumpy())}

    # cold: the first call of a structure, compile included
    minpy_jit.reset_stats()
    minpy_jit.clear_cache()
    jitted()
    s = minpy_jit.stats()
    # the 300 ops run as several segments (config segment_ops); repeated ones hit the cache
    graphs = s["cache_misses"]
    assert graphs >= 1 and graphs + s["cache_hits"] == s["executions"] and s["ops_recorded"] == N_OPS, s
    compile_ms_first = s["compile_ms"]
    minpy_jit.reset_stats()
    r_cold = timing.bench_each(jitted, setup=minpy_jit.clear_cache, name="jit cold")
    s = minpy_jit.stats()
    compile_ms = s["compile_ms"] / max(1, s["cache_misses"])
    assert s["cache_misses"] == graphs * (len(r_cold.per_call) + 1), s

    # steady state
    jitted()  # compile once more (cache was cleared)
    minpy_jit.reset_stats()
    res = timing.compare({"eager": eager, "hybrid": hybrid, "jit": jitted})
    r_eager, r_hyb, r_jit = res["eager"], res["hybrid"], res["jit"]
    jit_stats = minpy_jit.stats()

    # recording cost: the 300 ops under jit(), scope-exit flush not timed
    def record_section():
        with minpy_jit.jit():
            t0 = timing.perf()
            chain(x0)
            dt = timing.perf() - t0
        return dt

    r_rec = timing.bench_section(record_section, "record")

    # MXNet's own Python wrapper cost: the same calls with the C-API invoke stubbed out
    out_stub = nd.zeros(SHAPE)
    real_invoke = _register._imperative_invoke

    def stub(handle, ndargs, keys, vals, out, is_np_op=False, output_is_list=False):
        return out_stub

    def wrapper_section():
        _register._imperative_invoke = stub
        try:
            t0 = timing.perf()
            chain(x0)
            return timing.perf() - t0
        finally:
            _register._imperative_invoke = real_invoke

    r_wrap = timing.bench_section(wrapper_section, "wrapper")
    assert _register._imperative_invoke is real_invoke

    us = lambda r: r.median / N_OPS * 1e6  # noqa: E731
    print("W1 small-op chain: x %s, %d x relu(x*%g+%g) = %d ops" % (SHAPE, REPS, MUL, ADD, N_OPS))
    timing.print_env()
    print()
    rows = [
        ["eager MXNet", "%.2f" % us(r_eager), "%.3f" % (r_eager.median * 1e3), "%.0f%%" % (100 * r_eager.spread)],
        ["hybridized (static_alloc+static_shape)", "%.2f" % us(r_hyb), "%.3f" % (r_hyb.median * 1e3),
         "%.0f%%" % (100 * r_hyb.spread)],
        ["jit() cold (compile included)", "%.2f" % us(r_cold), "%.3f" % (r_cold.median * 1e3),
         "%.0f%%" % (100 * r_cold.spread)],
        ["jit() steady state", "%.2f" % us(r_jit), "%.3f" % (r_jit.median * 1e3), "%.0f%%" % (100 * r_jit.spread)],
    ]
    timing.table(rows, ["mode", "us/op", "ms/call", "spread"])
    print()
    print("ratio eager/jit      %s" % timing.ratio(r_eager.median, r_jit.median))
    print("ratio hybridized/jit %s" % timing.ratio(r_hyb.median, r_jit.median))
    print("ratio cold/steady    %s" % timing.ratio(r_cold.median, r_jit.median))
    print()
    rec, wrap = us(r_rec), us(r_wrap)
    print("recording under jit():        %.2f us/op (300 ops, flush excluded)" % rec)
    print("MXNet Python wrapper floor:   %.2f us/op (invoke stubbed out)" % wrap)
    print("recording overhead per op:    %.2f us/op (recording - wrapper)" % (rec - wrap))
    print("cold compile:                 %.2f ms per graph, %d graphs per call (stats()['compile_ms'] per "
          "miss; first call: %.2f ms)" % (compile_ms, graphs, compile_ms_first))
    for m, c in checks.items():
        print("%-6s vs float64 reference (%s): %s" % (m, c["tol"], reference.check_text(c)))
    print("jit steady stats: cache_hits=%d cache_misses=%d flushes=%s ops_recorded=%d executions=%d "
          "fallbacks=%s" % (jit_stats["cache_hits"], jit_stats["cache_misses"], jit_stats["flushes"],
                             jit_stats["ops_recorded"], jit_stats["executions"], jit_stats["fallbacks"]))
    timing.write_summary(timing.summary_arg(), dict(
        id="W1", workload="W1 small-op chain", unit="us/op", eager=us(r_eager), hybrid=us(r_hyb), jit=us(r_jit),
        checks=checks,
        jit_cold=us(r_cold), cache_hits=jit_stats["cache_hits"], cache_misses=jit_stats["cache_misses"],
        record_us_per_op=rec, wrapper_us_per_op=wrap, compile_ms=compile_ms))


if __name__ == "__main__":
    main()
