"""Run every benchmark script (each in its own process) and print one summary table.

    .venv/bin/python benchmarks/run_all.py

Each script prints its own full table first; the summary repeats the headline
numbers: workload, eager, hybridized, jit() steady state, ratios, and the jit
cache hits/misses over the timed calls. Compare ratios, not absolute times
across runs (shared, noisy machine).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import timing  # noqa: E402

SCRIPTS = ["w1_small_ops.py", "w3_mlp_step.py", "w4_lstm.py", "w5_many_updates.py"]


def fmt(v):
    return "n/a" if v is None else ("%.3f" % v if v < 10 else "%.2f" % v)


def main():
    summaries = []
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for script in SCRIPTS:
            out = os.path.join(tmp, script + ".json")
            print("=" * 100)
            print("$ %s %s" % (os.path.basename(sys.executable), os.path.join("benchmarks", script)), flush=True)
            rc = subprocess.call([sys.executable, os.path.join(HERE, script), "--json", out])
            if rc != 0 or not os.path.exists(out):
                failed.append(script)
                print("!! %s exited with %d" % (script, rc))
                continue
            with open(out) as f:
                summaries.append(json.load(f))
    print("=" * 100)
    print("Summary (medians; ratios > 1 mean jit() is faster)")
    timing.print_env()
    print()
    rows = []
    for s in summaries:
        rows.append([s["workload"], s["unit"], fmt(s["eager"]), fmt(s["hybrid"]), fmt(s["jit"]),
                     timing.ratio(s["eager"], s["jit"]),
                     timing.ratio(s["hybrid"], s["jit"]) if s["hybrid"] else "n/a",
                     "%d/%d" % (s["cache_hits"], s["cache_misses"])])
    timing.table(rows, ["workload", "unit", "eager", "hybridized", "jit steady", "eager/jit", "hybrid/jit",
                        "jit hits/misses"])
    for s in summaries:
        if s.get("errors"):
            for kind, err in s["errors"].items():
                print("%s: jit() failed on form %r: %s" % (s["workload"], kind, err))
    w1 = [s for s in summaries if s["workload"].startswith("W1")]
    if w1:
        s = w1[0]
        print("W1: jit cold %.2f us/op; recording %.2f us/op - wrapper %.2f us/op = overhead %.2f us/op; "
              "compile %.2f ms" % (s["jit_cold"], s["record_us_per_op"], s["wrapper_us_per_op"],
                                   s["record_us_per_op"] - s["wrapper_us_per_op"], s["compile_ms"]))
    w3 = [s for s in summaries if s["workload"].startswith("W3")]
    if w3:
        print("W3 peak RSS MB: " + ", ".join("%s %.1f" % kv for kv in sorted(w3[0]["rss_mb"].items())))
    if failed:
        print("FAILED scripts: %s" % ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
