"""Same-build A/B of one boolean config option of minpy_jit, off and on in alternating child
processes (each process runs one setting, so neither setting's compiled graphs or memory are
in the other's way), on W3 (Gluon + Trainer step inside jit()), W4 (the 50-step LSTMCell
sequence inside jit()) and W4F (the same sequence as an @minpy_jit.function). Prints, per workload and setting, the median over pairs of the wall and
process CPU time per call (CPU time: every thread of the process; on a shared machine wall time
mostly measures the scheduler), and on/off ratios; and, counted in one more pair of processes
with MXNet's profiler (not timed), the engine operations MXNet runs per call: a count that does
not depend on the machine's load.

    .venv/bin/python benchmarks/config_ab.py OPTION [--pairs 5] [--calls 200] [--only w3,w4,w4f]
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def engine_ops_per_call(fn, calls=20):
    """Engine operations (a bulk of several operators counts once) MXNet's profiler sees per call."""
    import re
    from mxnet import nd, profiler
    nd.waitall()
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=os.devnull)
    profiler.set_state("run")
    for _ in range(calls):
        fn()
    nd.waitall()
    profiler.set_state("stop")
    text = profiler.dumps(reset=True)
    ops = 0
    for line in text[text.index("\noperator"):].splitlines():
        m = re.match(r"(\S.*?)\s{2,}(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", line)
        if m and m.group(1) not in ("WaitForVar", "DeleteVariable"):
            ops += int(m.group(2))
    return ops / calls


def child(option, setting, only, calls, count):
    import mxnet as mx
    import numpy as np
    from mxnet import nd
    from mxnet.gluon import rnn

    import minpy_jit
    from w3_mlp_step import Setup, initial_weights

    minpy_jit.config(**{option: setting})
    work = {}
    if "w3" in only:
        work["w3"] = Setup("jit", initial_weights()).step
    if "w4" in only or "w4f" in only:
        cell = rnn.LSTMCell(128, input_size=64)
        cell.initialize(mx.init.Xavier())
        rng = np.random.RandomState(0)
        xs = [nd.array(rng.uniform(-1, 1, (16, 64)).astype(np.float32)) for _ in range(50)]
        h0, c0 = nd.zeros((16, 128)), nd.zeros((16, 128))

        def sequence(xs, h, c):
            states = [h, c]
            for x in xs:
                _, states = cell(x, states)
            return states

        def w4():
            with minpy_jit.jit():
                states = sequence(xs, h0, c0)
            states[0].wait_to_read()
        sequence_function = minpy_jit.function(sequence)
        if "w4" in only:
            work["w4"] = w4
        if "w4f" in only:
            work["w4f"] = lambda: sequence_function(xs, h0, c0)[0].wait_to_read()
    out = {}
    for name, fn in work.items():
        n = calls if name == "w3" else max(1, calls // 5)  # a W4 sequence is 50 cell steps
        for _ in range(10):
            fn()
        if count:
            out[name] = engine_ops_per_call(fn)
            continue
        t0, p0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            fn()
        out[name] = ((time.perf_counter() - t0) / n * 1e3, (time.process_time() - p0) / n * 1e3)
    print("RESULT " + json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("option")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--only", default="w3,w4")
    ap.add_argument("--child", choices=("0", "1"))
    ap.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    only = a.only.split(",")
    if a.child is not None:
        return child(a.option, a.child == "1", only, a.calls, a.count)
    counts = {}
    for s in (0, 1):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), a.option, "--child", str(s), "--count",
                              "--only", a.only], capture_output=True, text=True, check=True).stdout
        counts[s] = json.loads([ln for ln in out.splitlines() if ln.startswith("RESULT ")][0][7:])
    runs = {0: [], 1: []}
    load0 = os.getloadavg()
    for i in range(a.pairs):
        for s in ((0, 1) if i % 2 == 0 else (1, 0)):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), a.option, "--child", str(s),
                                  "--calls", str(a.calls), "--only", a.only],
                                 capture_output=True, text=True, check=True).stdout
            runs[s].append(json.loads([ln for ln in out.splitlines() if ln.startswith("RESULT ")][0][7:]))
    import numpy as np
    print("config_ab %s: %d pairs, %d calls (W4: %d sequences) a process; load %.1f %.1f %.1f -> %.1f %.1f %.1f"
          % ((a.option, a.pairs, a.calls, max(1, a.calls // 5)) + load0 + os.getloadavg()))
    for name in only:
        med = {s: np.median([r[name] for r in runs[s]], axis=0) for s in (0, 1)}
        cpus = {s: " ".join("%.3f" % r[name][1] for r in runs[s]) for s in (0, 1)}
        print("  %s ms/call  off wall %.3f cpu %.3f | on wall %.3f cpu %.3f | on/off wall %.3fx cpu %.3fx"
              % (name, med[0][0], med[0][1], med[1][0], med[1][1], med[1][0] / med[0][0], med[1][1] / med[0][1]))
        print("     cpu per process, off: %s; on: %s" % (cpus[0], cpus[1]))
        print("     engine operations per call: off %.1f, on %.1f" % (counts[0][name], counts[1][name]))


if __name__ == "__main__":
    main()
