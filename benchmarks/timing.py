"""Shared timing helpers for the benchmark scripts.

Policy (same as the project's benchmark definitions): warm-up calls first, then
at least 7 timed repeats; each repeat runs `inner` calls, with `inner` chosen so
that one repeat lasts about TARGET_REPEAT_S; the reported figure is the median
over repeats of the per-call time. Every timed callable must end with its result
ready (`wait_to_read()` / `asnumpy()` / `nd.waitall()`): the times are latencies,
not enqueue times.

The machines are shared and noisy: compare ratios measured in one run, not
absolute times across runs.
"""
import json
import os
import platform
import statistics
import sys
import time

# Copied from the benchmark definitions (the project does not import them).
SEED = 0
WARMUP_CALLS = 5
REPEATS = 9
TARGET_REPEAT_S = 0.08
MAX_INNER = 5000

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MXNET_ENGINE_TYPE",
               "MXNET_CPU_WORKER_NTHREADS", "MXNET_OMP_MAX_THREADS", "MXNET_MKLDNN_ENABLED", "MINPY_JIT")

perf = time.perf_counter


class Result:
    """Per-call times of one benchmark (seconds)."""

    def __init__(self, name, per_call, inner):
        self.name = name
        self.per_call = per_call  # one entry per repeat
        self.inner = inner

    @property
    def median(self):
        return statistics.median(self.per_call)

    @property
    def best(self):
        return min(self.per_call)

    @property
    def spread(self):
        """(max - min) / median over repeats: a noise indicator."""
        m = self.median
        return (max(self.per_call) - min(self.per_call)) / m if m else 0.0

    def __repr__(self):
        return "Result(%s: median %.4g s, inner %d, %d repeats)" % (
            self.name, self.median, self.inner, len(self.per_call))


def choose_inner(fn, target=TARGET_REPEAT_S, max_inner=MAX_INNER):
    """Number of calls that makes one repeat last about `target` seconds."""
    n = 1
    while True:
        t0 = perf()
        for _ in range(n):
            fn()
        dt = perf() - t0
        if dt >= target / 4 or n >= max_inner:
            break
        n *= 4
    per = dt / n
    return max(1, min(max_inner, int(round(target / per)) if per > 0 else max_inner))


def bench(fn, name="", warmup=WARMUP_CALLS, repeats=REPEATS, target=TARGET_REPEAT_S,
          max_inner=MAX_INNER, inner=None):
    """Time `fn()` (which must return with its result ready). Returns a Result."""
    assert repeats >= 7, "timing policy: at least 7 repeats"
    for _ in range(warmup):
        fn()
    if inner is None:
        inner = choose_inner(fn, target, max_inner)
    per_call = []
    for _ in range(repeats):
        t0 = perf()
        for _ in range(inner):
            fn()
        per_call.append((perf() - t0) / inner)
    return Result(name, per_call, inner)


def compare(fns, warmup=WARMUP_CALLS, repeats=REPEATS, target=TARGET_REPEAT_S, max_inner=MAX_INNER,
            sections=False):
    """Time several callables with their repeats interleaved (round-robin).

    `fns` maps name -> callable. On a shared, noisy machine interleaving makes
    the ratios between modes much steadier than timing one mode after another.
    With sections=True each callable times itself and returns the seconds it
    measured (see bench_section). Returns {name: Result}.
    """
    assert repeats >= 7, "timing policy: at least 7 repeats"

    def run(fn, n):
        if sections:
            return sum(fn() for _ in range(n))
        t0 = perf()
        for _ in range(n):
            fn()
        return perf() - t0

    inners = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        n = 1
        while True:
            dt = run(fn, n)
            if dt >= target / 4 or n >= max_inner:
                break
            n *= 4
        inners[name] = max(1, min(max_inner, int(round(target / (dt / n))) if dt > 0 else max_inner))
    per_call = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            per_call[name].append(run(fn, inners[name]) / inners[name])
    return {name: Result(name, per_call[name], inners[name]) for name in fns}


def bench_each(fn, setup=None, name="", warmup=1, repeats=REPEATS):
    """Time single calls of `fn()`, running `setup()` (untimed) before each one.

    For costs that cannot be amortised in an inner loop, e.g. a cold call that
    needs the compile cache cleared first. One call per repeat.
    """
    assert repeats >= 7, "timing policy: at least 7 repeats"
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    per_call = []
    for _ in range(repeats):
        if setup:
            setup()
        t0 = perf()
        fn()
        per_call.append(perf() - t0)
    return Result(name, per_call, 1)


def bench_section(section, name="", warmup=WARMUP_CALLS, repeats=REPEATS, target=TARGET_REPEAT_S,
                  max_inner=MAX_INNER):
    """Time only part of a call: `section()` returns the seconds it measured itself.

    Used where a call has an untimed tail (e.g. the flush at a jit() scope exit
    when measuring recording cost alone).
    """
    assert repeats >= 7, "timing policy: at least 7 repeats"
    for _ in range(warmup):
        section()
    t0 = perf()
    n = 0
    while perf() - t0 < target / 4 and n < max_inner:
        section()
        n += 1
    inner = max(1, min(max_inner, int(round(target / ((perf() - t0) / n)))))
    per_call = []
    for _ in range(repeats):
        per_call.append(sum(section() for _ in range(inner)) / inner)
    return Result(name, per_call, inner)


def run_child(argv):
    """Run `argv` as a grandchild through /bin/sh and return its stdout.

    Linux carries a process's peak RSS across fork+exec (the forked copy of this
    large process counts), so a child's own getrusage(RUSAGE_SELF).ru_maxrss
    would report at least our peak. A small shell in between (which forks, then
    runs the command, and is not allowed to exec it directly) gives the
    grandchild a clean peak-RSS count.
    """
    import subprocess
    return subprocess.run(["/bin/sh", "-c", '"$@"; rc=$?; exit $rc', "sh"] + list(argv),
                          check=True, capture_output=True, text=True).stdout


def env_report():
    """Thread settings and machine facts, as printable lines."""
    import mxnet as mx
    lines = ["python %s, mxnet %s, %s, cpu_count=%s, affinity=%s, load avg %s" % (
        platform.python_version(), mx.__version__, platform.machine(), os.cpu_count(),
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?",
        " ".join("%.2f" % v for v in os.getloadavg()))]
    lines.append("threads: " + ", ".join("%s=%s" % (v, os.environ.get(v, "(unset)")) for v in THREAD_VARS))
    lines.append("timing: warm-up %d calls, %d repeats, ~%.2f s per repeat, median of per-call times"
                 % (WARMUP_CALLS, REPEATS, TARGET_REPEAT_S))
    return lines


def print_env(file=None):
    for line in env_report():
        print(line, file=file or sys.stdout)


def table(rows, headers, file=None, left=1):
    """Print a plain-text table; rows are sequences of already formatted cells. The first `left`
    columns are left-aligned, the others right-aligned."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    out = file or sys.stdout
    fmt = "  ".join("{:<%d}" % w if i < left else "{:>%d}" % w for i, w in enumerate(widths))
    print(fmt.format(*headers), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in rows:
        print(fmt.format(*r), file=out)


def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "n/a"


def seed_all(seed=SEED):
    import random

    import mxnet as mx
    import numpy as np
    random.seed(seed)
    np.random.seed(seed)
    mx.random.seed(seed)


def write_summary(path, summary):
    """Used by run_all.py: each script writes its headline numbers as JSON."""
    if path:
        with open(path, "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)


def summary_arg(argv=None):
    """`--json PATH` on the command line -> PATH, else None."""
    argv = sys.argv[1:] if argv is None else argv
    if "--json" in argv:
        return argv[argv.index("--json") + 1]
    return None
