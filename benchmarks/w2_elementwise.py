"""W2 elementwise chain: x of shape (1,000,000,); 10 times x = tanh(x * 0.9 + 0.1) * sigmoid(x) -> 50 ops.

Modes: eager MXNet, a HybridBlock hybridized with static_alloc=True, static_shape=True, and
jit() (the same loop inside `with minpy_jit.jit():`). Reports ms per call and GB/s, counting one
read and one write of x per call (8 MB: what the chain must move when fused), against a
single-pass copy of the same array (NumPy copyto into a preallocated array) timed in the same
run, interleaved with the three modes. Every mode's result of the fixed input is checked against
the float64 NumPy reference (reference.py).

    .venv/bin/python benchmarks/w2_elementwise.py [--json out.json]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from mxnet import gluon, nd  # noqa: E402

import minpy_jit  # noqa: E402
import reference  # noqa: E402
import timing  # noqa: E402

W2 = reference.W2
MODES = ("eager", "hybrid", "jit")


def chain(x):
    for _ in range(W2["reps"]):
        x = nd.tanh(x * W2["mul"] + W2["add"]) * nd.sigmoid(x)
    return x


class Chain(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        for _ in range(W2["reps"]):
            x = F.tanh(x * W2["mul"] + W2["add"]) * F.sigmoid(x)
        return x


def main():
    x_np = reference.w2_input()
    x0 = nd.array(x_np)
    x0.wait_to_read()
    net = Chain()
    net.hybridize(static_alloc=True, static_shape=True)

    def jitted_result():
        with minpy_jit.jit():
            y = chain(x0)
        return y

    results = {"eager": lambda: chain(x0), "hybrid": lambda: net(x0), "jit": jitted_result}

    # correctness, once, before timing: every mode against the float64 reference
    checks = {m: reference.check("W2", f().asnumpy()) for m, f in results.items()}

    copy_dst = np.empty_like(x_np)
    fns = {m: (lambda f=f: f().wait_to_read()) for m, f in results.items()}
    fns["copy"] = lambda: np.copyto(copy_dst, x_np)
    jitted_result().wait_to_read()
    minpy_jit.reset_stats()
    res = timing.compare(fns)
    jit_stats = minpy_jit.stats()
    ms = {m: r.median * 1e3 for m, r in res.items()}
    gbps = {m: W2["bytes"] / (ms[m] * 1e-3) / 1e9 for m in ms}

    print("W2 elementwise chain: x (%d,) float32, %d x tanh(x*%g+%g)*sigmoid(x) = %d ops"
          % (W2["n"], W2["reps"], W2["mul"], W2["add"], W2["n_ops"]))
    timing.print_env()
    print()
    names = {"eager": "eager MXNet", "hybrid": "hybridized (static_alloc+static_shape)",
             "jit": "jit() steady state", "copy": "single-pass copy (numpy copyto, same array)"}
    rows = [[names[m], "%.3f" % ms[m], "%.1f" % gbps[m], "%.0f%%" % (100 * gbps[m] / gbps["copy"]),
             "%.0f%%" % (100 * res[m].spread), reference.check_text(checks.get(m)) if m in checks else "-"]
            for m in MODES + ("copy",)]
    timing.table(rows, ["mode", "ms/call", "GB/s", "of copy", "spread", "vs float64 (%s)"
                        % checks["eager"]["tol"]])
    print("(GB/s: %d MB per call, one read and one write of x)" % (W2["bytes"] // 10**6))
    print()
    print("ratio eager/jit      %s" % timing.ratio(ms["eager"], ms["jit"]))
    print("ratio hybridized/jit %s" % timing.ratio(ms["hybrid"], ms["jit"]))
    print("jit stats over the timed calls: cache_hits=%d cache_misses=%d flushes=%s executions=%d "
          "fused_kernels=%d fallbacks=%s" % (jit_stats["cache_hits"], jit_stats["cache_misses"],
                                             jit_stats["flushes"], jit_stats["executions"],
                                             jit_stats.get("fused_kernels", 0), jit_stats["fallbacks"]))
    timing.write_summary(timing.summary_arg(), dict(
        id="W2", workload="W2 elementwise chain", unit="ms/call", eager=ms["eager"], hybrid=ms["hybrid"],
        jit=ms["jit"], copy_ms=ms["copy"], gbps=gbps, cache_hits=jit_stats["cache_hits"],
        cache_misses=jit_stats["cache_misses"], checks=checks))


if __name__ == "__main__":
    main()
