"""Run every benchmark (each in its own process) and print one summary.

    .venv/bin/python benchmarks/run_all.py [W1 W2 ... F] [--no-peers] [--threads N]

For each workload W1-W5: the MXNet script (eager, hybridized, jit()) runs with this interpreter,
then each peer (PyTorch eager and torch.compile, JAX jit; peer_torch.py, peer_jax.py) with the
interpreter of .venv-bench (made by `bash scripts/bench-peers.sh` from requirements-bench.txt;
another one can be named by MINPY_BENCH_PEERS_PYTHON). A peer that is not installed is skipped
with a note. Each script prints its own full table first; the summary then repeats the headline
numbers: MXNet's table (eager, hybridized, jit() steady state, ratios, jit cache hits/misses),
then every system's time on every workload with the ratio of its time to jit()'s and its check
against the float64 NumPy reference (reference.py). A failed check is marked in its row and listed
at the end, and makes the exit status 1, as does a script that fails. Compare ratios, not absolute
times across runs (shared, noisy machine).

F is @minpy_jit.function (function_workloads.py): W1, W3 and W4 written as decorated functions,
each against eager, hybridized and jit() in one run, and the cost of a guard check; it runs when
no workload is named, or when F is.

Threads: every system runs with its defaults (torch and JAX use both cores) unless `--threads N`
sets OMP_NUM_THREADS and MKL_NUM_THREADS (MXNet's and torch's OpenMP, torch's intra-op pool) and
XLA_FLAGS (JAX's CPU pool) to N for every script. Threads that wait for each other at every op
suffer most when other processes share the cores: the summary prints the load average.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import reference  # noqa: E402
import timing  # noqa: E402

WORKLOADS = ("W1", "W2", "W3", "W4", "W5")
MXNET_SCRIPTS = {"W1": "w1_small_ops.py", "W2": "w2_elementwise.py", "W3": "w3_mlp_step.py",
                 "W4": "w4_lstm.py", "W5": "w5_many_updates.py"}
# peer name -> (script, the module it needs)
PEERS = {"torch": ("peer_torch.py", "torch"), "jax": ("peer_jax.py", "jax")}
MXNET_NAMES = {"eager": "MXNet eager", "hybrid": "MXNet hybridized", "jit": "minpy_jit jit()"}
FUNCTION_SCRIPT = "function_workloads.py"


def fmt(v):
    return "n/a" if v is None else ("%.3f" % v if v < 10 else "%.2f" % v)


def peers_python():
    py = os.environ.get("MINPY_BENCH_PEERS_PYTHON") or os.path.join(ROOT, ".venv-bench", "bin", "python")
    return py if os.path.exists(py) else None


def available_peers(py, notes):
    """{peer: script} of the peers importable by `py`; a note for each one that is not."""
    found = {}
    if py is None:
        notes.append("peers skipped: no .venv-bench (optional; `bash scripts/bench-peers.sh` makes it from "
                     "requirements-bench.txt, or set MINPY_BENCH_PEERS_PYTHON)")
        return found
    for peer, (script, module) in PEERS.items():
        rc = subprocess.call([py, "-c", "import %s" % module], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        if rc == 0:
            found[peer] = script
        else:
            notes.append("%s skipped: `import %s` fails with %s (optional; see requirements-bench.txt)"
                         % (peer, module, py))
    return found


def run_script(python, script, args, tmp, failed):
    """Run one benchmark script; returns its JSON summary, or None (and records the failure)."""
    out = os.path.join(tmp, "%s_%s.json" % (script, "_".join(args)))
    print("=" * 100)
    print("$ %s %s %s" % (os.path.relpath(python, ROOT) if python.startswith(ROOT) else python,
                          os.path.join("benchmarks", script), " ".join(args)), flush=True)
    rc = subprocess.call([python, os.path.join(HERE, script)] + list(args) + ["--json", out])
    if rc != 0 or not os.path.exists(out):
        failed.append("%s %s (exit %d)" % (script, " ".join(args), rc))
        print("!! %s exited with %d" % (script, rc))
        return None
    with open(out) as f:
        return json.load(f)


def mxnet_systems(s):
    """The rows of one MXNet summary: eager, hybridized, jit() and any extra forms."""
    checks = s.get("checks") or {}
    form = " (%s)" % s["form"] if s.get("form") else ""
    rows = [dict(system=MXNET_NAMES[m] + form, value=s[m], check=checks.get(m))
            for m in ("eager", "hybrid", "jit") if s.get(m) is not None]
    return rows + list(s.get("extra_systems") or [])


def all_systems_table(workloads, mx, peers):
    """Every system's time, its ratio to jit() and its check; returns the failed checks."""
    rows, failed_checks = [], []
    for w in workloads:
        s = mx.get(w)
        systems = mxnet_systems(s) if s else []
        for p in peers.get(w, []):
            systems += p["systems"]
        ours = s.get("jit") if s else None
        for i, r in enumerate(systems):
            c = r.get("check")
            if r.get("error"):
                verdict = "ERROR: " + r["error"]
                failed_checks.append("%s %s: %s" % (w, r["system"], r["error"]))
            else:
                verdict = reference.check_text(c)
                if c is None or not c["ok"]:
                    failed_checks.append("%s %s: %s" % (w, r["system"], verdict))
            rows.append([reference.NAMES[w] if i == 0 else "", reference.UNITS[w] if i == 0 else "",
                         r["system"], fmt(r.get("value")),
                         timing.ratio(r.get("value"), ours) if r.get("value") and ours else "n/a",
                         "%.2f" % r["compile_s"] if r.get("compile_s") is not None else "",
                         verdict])
    timing.table(rows, ["workload", "unit", "system", "time", "time / jit()", "compile s",
                        "vs float64 reference"], left=3)
    return failed_checks


def w2_bandwidth(mx, peers):
    s = mx.get("W2")
    if not s:
        return
    copy_gbps = s["gbps"]["copy"]
    parts = ["%s %.2f" % (MXNET_NAMES[m], s["gbps"][m]) for m in ("eager", "hybrid", "jit")]
    for p in peers.get("W2", []):
        for r in p["systems"]:
            if r.get("value"):
                parts.append("%s %.2f" % (r["system"], reference.W2["bytes"] / (r["value"] * 1e-3) / 1e9))
    print("W2 GB/s (%d MB per call: one read and one write of x): single-pass copy of the same array "
          "(numpy, same run) %.1f GB/s (%.3f ms); " % (reference.W2["bytes"] // 10**6, copy_gbps, s["copy_ms"])
          + ", ".join(parts))


def function_table(s):
    """The @minpy_jit.function rows: each form against eager, hybridized and jit(), and the guard check."""
    rows = []
    for r in s["rows"]:
        if "function" in r:
            rows.append([r["workload"], r["unit"], fmt(r["eager"]), fmt(r["hybrid"]), fmt(r["jit"]),
                         fmt(r["function"]), timing.ratio(r["hybrid"], r["function"]),
                         timing.ratio(r["jit"], r["function"]), r["target"]])
    timing.table(rows, ["workload", "unit", "eager", "hybridized", "jit()", "@function", "hybrid/function",
                        "jit/function", "target"])
    for r in s["rows"]:
        if "guard_ns" in r:
            print("guard check on 10 array arguments: %.0f ns (target %s); a whole decorated call %.2f us"
                  % (r["guard_ns"], r["target"], r["call_us"]))


def thread_env(n):
    """Environment variables that give every system `n` compute threads."""
    return {"OMP_NUM_THREADS": str(n), "MKL_NUM_THREADS": str(n),
            "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=%s intra_op_parallelism_threads=%d"
                         % ("false" if n == 1 else "true", n)}


def main():
    args = sys.argv[1:]
    if "--threads" in args:
        os.environ.update(thread_env(int(args[args.index("--threads") + 1])))
    with_peers = "--no-peers" not in args
    workloads = [a for a in args if a in WORKLOADS] or ([] if "F" in args else list(WORKLOADS))
    with_function = "F" in args or not any(a in WORKLOADS for a in args)
    notes, failed = [], []
    peer_py = peers_python() if with_peers else None
    peers_found = available_peers(peer_py, notes) if with_peers else {}
    if not with_peers:
        notes.append("peers not run (--no-peers)")
    mx, peers, peer_env, function = {}, {}, {}, None
    with tempfile.TemporaryDirectory() as tmp:
        if with_function:
            function = run_script(sys.executable, FUNCTION_SCRIPT, [], tmp, failed)
        for w in workloads:
            s = run_script(sys.executable, MXNET_SCRIPTS[w], [], tmp, failed)
            if s:
                mx[w] = s
            for peer, script in peers_found.items():
                p = run_script(peer_py, script, ["--workload", w], tmp, failed)
                if p:
                    peers.setdefault(w, []).append(p)
                    peer_env.setdefault(peer, p["env"])
    print("=" * 100)
    print("Summary (medians; ratios > 1 mean jit() is faster)")
    timing.print_env()
    for peer, lines in peer_env.items():
        for line in lines:
            print("%s: %s" % (peer, line))
    print()
    rows = []
    for w in workloads:
        s = mx.get(w)
        if s:
            rows.append([s["workload"], s["unit"], fmt(s["eager"]), fmt(s["hybrid"]), fmt(s["jit"]),
                         timing.ratio(s["eager"], s["jit"]),
                         timing.ratio(s["hybrid"], s["jit"]) if s["hybrid"] else "n/a",
                         "%d/%d" % (s["cache_hits"], s["cache_misses"])])
    timing.table(rows, ["workload", "unit", "eager", "hybridized", "jit steady", "eager/jit", "hybrid/jit",
                        "jit hits/misses"])
    for s in mx.values():
        if s.get("errors"):
            for kind, err in s["errors"].items():
                print("%s: jit() failed on form %r: %s" % (s["workload"], kind, err))
    if "W1" in mx:
        s = mx["W1"]
        print("W1: jit cold %.2f us/op; recording %.2f us/op - wrapper %.2f us/op = overhead %.2f us/op; "
              "compile %.2f ms" % (s["jit_cold"], s["record_us_per_op"], s["wrapper_us_per_op"],
                                   s["record_us_per_op"] - s["wrapper_us_per_op"], s["compile_ms"]))
    if "W3" in mx:
        print("W3 peak RSS MB: " + ", ".join("%s %.1f" % kv for kv in sorted(mx["W3"]["rss_mb"].items())))
    if function:
        print()
        print("@minpy_jit.function (the workload written as one decorated function; ratios > 1 mean it is faster)")
        function_table(function)
    print()
    print("All systems (time in each workload's unit; time / jit() > 1 means jit() is faster; compile s: "
          "first call, outside the timed region)")
    failed_checks = all_systems_table(workloads, mx, peers)
    w2_bandwidth(mx, peers)
    for note in notes:
        print("note: " + note)
    for c in failed_checks:
        print("CHECK FAILED: " + c)
    if failed:
        print("FAILED scripts: %s" % ", ".join(failed))
    if failed or failed_checks:
        sys.exit(1)


if __name__ == "__main__":
    main()
