"""Adversarial shapes: a new input shape at every step of a jit() loop, compared with eager.

    PYTHONPATH=. .venv/bin/python tests/stress/shapes.py --steps 20000 --json tests/stress/out/shapes.json

Two phases of --steps steps each, every step a shape never seen before (rows x cols walk a
grid), the same small program (scalar arithmetic, relu, a reduction, a broadcast, a matrix
product) run eagerly and inside one jit() scope site:

1. default configuration: the site must stop compiling once it passes the recompile limit and
   run eagerly from then on (stats()['sites'][...]['eager']), results bit-identical to eager at
   every step, memory flat;
2. recompile limit lifted: every step compiles a new graph, so the LRU (config cache_size) must
   bound what is kept: graphs_cached <= cache_size, evictions counted, memory flat once the
   cache is full; results bit-identical.

RSS (/proc/self/statm) is sampled every --sample steps; "flat" means the largest RSS in the
second half of a phase is within --rss-tolerance of the RSS at its midpoint (the caches are
full by then). Prints the curve and a summary; exit status 1 on failure. Not collected by pytest.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

import mxnet as mx  # noqa: F401
from mxnet import nd

import minpy_jit


def rss_mb():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def program(x, w):
    y = nd.relu(x * 1.5 - 0.25)
    s = nd.sum(y, axis=1, keepdims=True)
    z = nd.broadcast_add(y, s) / 4.0
    return [z, nd.dot(z, w), nd.max(z, axis=0)]


GRID = (200, 100)  # rows x cols: 20000 shapes, in an order whose sizes do not drift with time
_ORDER = {}


def shape_at(step, phase):
    """A (rows, cols) pair unique to each step of a phase (for up to 20000 steps; then they repeat)."""
    if phase not in _ORDER:
        _ORDER[phase] = np.random.RandomState(100 + phase).permutation(GRID[0] * GRID[1])
    k = _ORDER[phase][(step - 1) % len(_ORDER[phase])]
    return 1 + k // GRID[1], 1 + k % GRID[1]


def run_phase(phase, args, site_line_holder):
    rng = np.random.RandomState(phase)
    samples, mismatches = [], []
    t0 = time.time()
    site = None
    for step in range(1, args.steps + 1):
        r, c = shape_at(step, phase)
        x = nd.array(rng.uniform(-2, 2, (r, c)).astype(np.float32))
        w = nd.array(rng.uniform(-1, 1, (c, 3)).astype(np.float32))
        want = [a.asnumpy() for a in program(x, w)]
        with minpy_jit.jit(site="shapes-phase-%d" % phase):
            got = program(x, w)
        got = [a.asnumpy() for a in got]
        if any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(want, got)) and len(mismatches) < 10:
            mismatches.append({"step": step, "shape": [r, c]})
        if step % args.sample == 0:
            st = minpy_jit.stats()
            site = st["sites"].get("shapes-phase-%d" % phase, {})
            samples.append({"step": step, "rss_mb": round(rss_mb(), 2), "graphs_cached": st["graphs_cached"],
                            "cache_misses": st["cache_misses"], "cache_evictions": st["cache_evictions"],
                            "site_compiles": site.get("compiles", 0), "site_eager": site.get("eager", False),
                            "seconds": round(time.time() - t0, 1)})
            s = samples[-1]
            print("phase %d step %6d  rss %8.2f MB  graphs cached %4d  misses %6d  evictions %6d  site compiles %d%s"
                  % (phase, step, s["rss_mb"], s["graphs_cached"], s["cache_misses"], s["cache_evictions"],
                     s["site_compiles"], "  (site eager)" if s["site_eager"] else ""), flush=True)
    return samples, mismatches


def flatness(samples, tol):
    mid = samples[len(samples) // 2]
    later = [s["rss_mb"] for s in samples[len(samples) // 2:]]
    growth = (max(later) - mid["rss_mb"]) / mid["rss_mb"]
    return mid, max(later), growth, growth <= tol


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--sample", type=int, default=500)
    ap.add_argument("--rss-tolerance", type=float, default=0.05)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    cfg = minpy_jit.config()
    result, failures = {"steps": args.steps, "config": cfg, "phases": []}, []

    minpy_jit.reset_stats()
    samples, mism = run_phase(1, args, None)
    mid, peak, growth, flat = flatness(samples, args.rss_tolerance)
    last = samples[-1]
    limit = cfg["recompile_limit"]
    ph = {"phase": 1, "samples": samples, "mismatches": mism, "rss_mid_mb": mid["rss_mb"], "rss_peak_later_mb": peak,
          "rss_growth": round(growth, 4), "site_compiles": last["site_compiles"], "site_eager": last["site_eager"]}
    result["phases"].append(ph)
    if mism:
        failures.append("phase 1: results differ from eager at %s" % mism[:3])
    if not last["site_eager"] or last["site_compiles"] > limit + 1:
        failures.append("phase 1: the site compiled %d graphs (limit %d) and is %s"
                        % (last["site_compiles"], limit, "eager" if last["site_eager"] else "still compiling"))
    if not flat:
        failures.append("phase 1: RSS grew %.1f%% in the second half" % (100 * growth))

    minpy_jit.clear_cache()
    minpy_jit.config(recompile_limit=10 ** 9)
    minpy_jit.reset_stats()
    try:
        samples, mism = run_phase(2, args, None)
    finally:
        minpy_jit.config(recompile_limit=limit)
    mid, peak, growth, flat = flatness(samples, args.rss_tolerance)
    last = samples[-1]
    ph = {"phase": 2, "samples": samples, "mismatches": mism, "rss_mid_mb": mid["rss_mb"], "rss_peak_later_mb": peak,
          "rss_growth": round(growth, 4), "graphs_cached_max": max(s["graphs_cached"] for s in samples),
          "cache_misses": last["cache_misses"], "cache_evictions": last["cache_evictions"]}
    result["phases"].append(ph)
    if mism:
        failures.append("phase 2: results differ from eager at %s" % mism[:3])
    if ph["graphs_cached_max"] > cfg["cache_size"]:
        failures.append("phase 2: %d graphs cached (cache_size %d)" % (ph["graphs_cached_max"], cfg["cache_size"]))
    if not flat:
        failures.append("phase 2: RSS grew %.1f%% in the second half (%.1f -> %.1f MB)"
                        % (100 * growth, mid["rss_mb"], peak))
    result["failures"] = failures
    p1, p2 = result["phases"]
    print()
    print("shapes phase 1 (recompile_limit %d): %d steps, site compiled %d graphs then %s; results %s; RSS %.2f MB "
          "at step %d, peak %.2f MB after (%+.2f%%)" % (
              limit, args.steps, p1["site_compiles"], "ran eagerly" if p1["site_eager"] else "KEPT COMPILING",
              "bit-identical at every step" if not p1["mismatches"] else "DIFFERENT", p1["rss_mid_mb"],
              p1["samples"][len(p1["samples"]) // 2]["step"], p1["rss_peak_later_mb"], 100 * p1["rss_growth"]))
    print("shapes phase 2 (no recompile limit, cache_size %d): %d steps, %d compiles, %d evictions, at most %d graphs "
          "cached; results %s; RSS %.2f MB at step %d, peak %.2f MB after (%+.2f%%)" % (
              cfg["cache_size"], args.steps, p2["cache_misses"], p2["cache_evictions"], p2["graphs_cached_max"],
              "bit-identical at every step" if not p2["mismatches"] else "DIFFERENT", p2["rss_mid_mb"],
              p2["samples"][len(p2["samples"]) // 2]["step"], p2["rss_peak_later_mb"], 100 * p2["rss_growth"]))
    print("PASS" if not failures else "FAIL: " + "; ".join(failures))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
