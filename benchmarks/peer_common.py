"""What the peer benchmarks (peer_torch.py, peer_jax.py) share: rows, checks, the JSON they hand
run_all.py, and the command line `--workload W1 [--json out.json]`.

A peer script runs one workload per process (run_all.py starts one per workload, with the
.venv-bench interpreter). Each system of the workload is a Row: its check against the float64
reference (reference.py) is made first, on the fixed input; then all systems of the workload are
timed together, interleaved (timing.compare). A system that raises is reported as failed with its
error; the others still run.
"""
import os
import platform
import sys
import time
import traceback

import reference
import timing


class Row:
    """One system on one workload: `call()` runs one timed call (result ready when it returns)."""

    def __init__(self, name, call=None, compile_s=None, check=None, note="", error=None):
        self.name = name
        self.call = call
        self.compile_s = compile_s
        self.check = check
        self.note = note
        self.error = error
        self.result = None  # timing.Result

    def summary(self, workload):
        r = self.result
        return dict(system=self.name, value=reference.per_unit(workload, r.median) if r else None,
                    ms=r.median * 1e3 if r else None, spread=r.spread if r else None,
                    inner=r.inner if r else None, compile_s=self.compile_s, check=self.check,
                    note=self.note, error=self.error)


def first_call_seconds(fn):
    """Seconds of the first call of `fn` (tracing and compiling included), and its return value."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def guarded(name, build):
    """`build()` -> Row; an exception becomes a failed Row that names it."""
    try:
        return build()
    except Exception as e:  # noqa: BLE001 - reported in the table and the JSON
        traceback.print_exc()
        return Row(name, error="%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else ""))


def run(workload, builders, env_lines):
    """Build every system's Row (compile, check), time the ones that built, print, write JSON."""
    rows = [guarded(name, build) for name, build in builders]
    timed = {r.name: r.call for r in rows if r.call is not None}
    if timed:
        res = timing.compare(timed)
        for r in rows:
            r.result = res.get(r.name)
    unit = reference.UNITS[workload]
    print("%s (%s), peers" % (reference.NAMES[workload], unit))
    for line in env_lines:
        print(line)
    print()
    table = []
    for r in rows:
        s = r.summary(workload)
        table.append([r.name, "%.3f" % s["value"] if s["value"] is not None else "FAILED",
                      "%.0f%%" % (100 * s["spread"]) if s["spread"] is not None else "-",
                      "%.2f" % r.compile_s if r.compile_s is not None else "-",
                      reference.check_text(r.check) if r.error is None else "error: " + r.error])
    tol = "rtol %g atol %g" % reference.TOLERANCES[workload]
    timing.table(table, ["system", unit, "spread", "compile s", "vs float64 (%s)" % tol])
    for r in rows:
        if r.note:
            print("%s: %s" % (r.name, r.note))
    summary = dict(id=workload, workload=reference.NAMES[workload], unit=unit, env=env_lines,
                   systems=[r.summary(workload) for r in rows])
    timing.write_summary(timing.summary_arg(), summary)
    return summary


def env_lines(framework_line):
    return ["python %s, %s, %s, cpu_count=%s, affinity=%s, load avg %s" % (
        platform.python_version(), framework_line, platform.machine(), os.cpu_count(),
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?",
        " ".join("%.2f" % v for v in os.getloadavg()))]


def workload_arg():
    argv = sys.argv[1:]
    if "--workload" not in argv:
        sys.exit("usage: %s --workload W1|W2|W3|W4|W5 [--json out.json]" % os.path.basename(sys.argv[0]))
    return argv[argv.index("--workload") + 1]
