"""@minpy_jit.function on W1, W3 and W4, each against eager MXNet, a hybridized block and jit() in one
run (interleaved repeats, medians), and the cost of a guard check.

    W1  x (32, 32); 100 x relu(x * 1.01 + 0.5) written as one decorated function (the loop inside)
    W3  the MLP training step (forward, backward, trainer.step) as one decorated function
    W4  the whole 50-step LSTMCell sequence as one decorated function
    guards  a decorated function of 10 array arguments: ns per guard check (timed in C++ over
            the same arguments), and us per call of the whole decorated function

Targets (issue 11): W1 >= 5x faster than the hybridized block; W4 >= 2x faster than the
hybridized sequence and than jit(); W3 >= 1.3x faster than jit() and no slower than the
hybridized step; a guard check on 10 arrays < 2 us.

    .venv/bin/python benchmarks/function_workloads.py [--json out.json] [--only w1,w3,w4,guards] [--breakdown] [--cpu]
                                                      [--threads]

--breakdown: after the table, where the time of one call goes, for @function and jit(): MXNet's
profiler, operator time per call summed by operator, against the wall and CPU time (process time:
both the Python thread and MXNet's worker) of the same profiled calls. A workload whose operator
time is most of its call is bound by its kernels; the rest is the call's fixed costs (Python,
guards, CachedOp, engine). So that each operator is timed on its own, the flag turns MXNet's
engine bulking off for the whole run: that run's table is slower (hybridized most) and not
comparable with a run without the flag.

--threads: after the table, each mode's CPU time per call split between the Python thread and
the process's other threads (MXNet's engine worker, our kernel helpers), with the wall time of
the same calls. The two halves run one after the other on one core and side by side on two: a
mode whose Python thread records while the engine runs earlier work (jit()'s segments) can
finish in less wall time than its CPU time, one that hands all its work to the engine at once
(@function's single launch) cannot. `bound` is the wall time jit() would take if its two
halves overlapped perfectly, max(python, rest): the jit/function ratio in wall time on an idle
2-core machine lies between bound/function-cpu and jit-cpu/function-cpu.

--cpu: the table's times are the process's CPU time per call (every thread: Python, MXNet's
engine worker, our kernel helpers) instead of wall time, with the same interleaved repeats.
On a machine shared with other busy processes, wall time mostly measures the scheduler (each
hand-off between the Python thread and the engine worker waits for a time slice: spreads of
100-2000% were seen at load 11); CPU time is the work a mode costs and moves far less. The
targets are wall-time ratios: on an idle machine, where these single-stream workloads run
their Python and engine parts one after the other, the two agree.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if "--breakdown" in sys.argv:  # read by MXNet when it starts: one profiler entry per operator
    os.environ.setdefault("MXNET_EXEC_BULK_EXEC_INFERENCE", "0")
    os.environ.setdefault("MXNET_EXEC_BULK_EXEC_TRAIN", "0")

import re  # noqa: E402
import time  # noqa: E402

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon, nd, profiler  # noqa: E402
from mxnet.gluon import nn, rnn  # noqa: E402

import minpy_jit  # noqa: E402
import timing  # noqa: E402

if "--cpu" in sys.argv:
    timing.perf = time.process_time  # every timing below reads the clock through timing.perf

# ------------------------------------------------------------------ W1 (definition copied from the workloads)
W1_SHAPE, W1_REPS, W1_MUL, W1_ADD = (32, 32), 100, 1.01, 0.5
W1_OPS = 3 * W1_REPS


def w1_chain(x):
    for _ in range(W1_REPS):
        x = nd.relu(x * W1_MUL + W1_ADD)
    return x


w1_function = minpy_jit.function(w1_chain)


class W1Block(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        for _ in range(W1_REPS):
            x = F.relu(x * W1_MUL + W1_ADD)
        return x


def bench_w1():
    timing.seed_all()
    x = nd.random.uniform(-1, 1, shape=W1_SHAPE)
    x.wait_to_read()
    net = W1Block()
    net.hybridize(static_alloc=True, static_shape=True)
    ref = w1_chain(x).asnumpy()

    def jitted():
        with minpy_jit.jit():
            y = w1_chain(x)
        return y

    for name, f in (("hybrid", lambda: net(x)), ("jit", jitted), ("function", lambda: w1_function(x))):
        assert np.allclose(f().asnumpy(), ref, rtol=1e-5, atol=1e-5), name
    fns = {
        "eager": lambda: w1_chain(x).wait_to_read(),
        "hybrid": lambda: net(x).wait_to_read(),
        "jit": lambda: jitted().wait_to_read(),
        "function": lambda: w1_function(x).wait_to_read(),
    }
    res = timing.compare(fns)
    return {"workload": "W1 small-op chain", "unit": "us/op", "scale": 1e6 / W1_OPS, "res": res, "fns": fns,
            "target": "function >= 5x faster than hybridized"}


# ------------------------------------------------------------------ W4
W4_BATCH, W4_HIDDEN, W4_INPUT, W4_T = 16, 128, 64, 50


class W4Unrolled(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.cell = rnn.LSTMCell(W4_HIDDEN, input_size=W4_INPUT)

    def hybrid_forward(self, F, x, h, c):
        _, states = self.cell.unroll(W4_T, x, begin_state=[h, c], layout="TNC", merge_outputs=True)
        return states[0], states[1]


def bench_w4():
    timing.seed_all()
    cell = rnn.LSTMCell(W4_HIDDEN, input_size=W4_INPUT)
    cell.initialize(mx.init.Xavier())
    seq = W4Unrolled()
    seq.initialize()
    for name, p in cell.collect_params().items():
        seq.cell.collect_params()[seq.cell.prefix + name[len(cell.prefix):]].set_data(p.data())
    seq.hybridize(static_alloc=True, static_shape=True)
    rng = np.random.RandomState(timing.SEED)
    x_all = nd.array(rng.uniform(-1, 1, (W4_T, W4_BATCH, W4_INPUT)).astype(np.float32))
    xs = [x_all[t].copy() for t in range(W4_T)]
    h0, c0 = nd.zeros((W4_BATCH, W4_HIDDEN)), nd.zeros((W4_BATCH, W4_HIDDEN))
    nd.waitall()

    def loop(xs, h, c):
        states = [h, c]
        for t in range(W4_T):
            _, states = cell(xs[t], states)
        return states

    sequence = minpy_jit.function(loop)

    def jitted():
        with minpy_jit.jit():
            s = loop(xs, h0, c0)
        return s

    ref = [s.asnumpy() for s in loop(xs, h0, c0)]
    for name, f in (("hybrid", lambda: seq(x_all, h0, c0)), ("jit", jitted),
                    ("function", lambda: sequence(xs, h0, c0))):
        for a, b in zip(ref, f()):
            assert np.allclose(a, b.asnumpy(), rtol=1e-5, atol=1e-6), name
    fns = {
        "eager": lambda: loop(xs, h0, c0)[0].wait_to_read(),
        "hybrid": lambda: seq(x_all, h0, c0)[0].wait_to_read(),
        "jit": lambda: jitted()[0].wait_to_read(),
        "function": lambda: sequence(xs, h0, c0)[0].wait_to_read(),
    }
    res = timing.compare(fns)
    return {"workload": "W4 LSTM 50 steps", "unit": "ms/seq", "scale": 1e3, "res": res, "fns": fns,
            "target": "function >= 2x faster than hybridized and than jit()"}


# ------------------------------------------------------------------ W3
W3_BATCH, W3_SIZES, W3_LR = 64, (784, 256, 256, 10), 0.1


def w3_net():
    net = nn.HybridSequential()
    with net.name_scope():
        for i, (nin, nout) in enumerate(zip(W3_SIZES[:-1], W3_SIZES[1:])):
            net.add(nn.Dense(nout, in_units=nin, activation=None if i == len(W3_SIZES) - 2 else "relu"))
    return net


def bench_w3():
    timing.seed_all()
    init = w3_net()
    init.initialize(mx.init.Xavier())
    weights = [p.data().copy() for p in init.collect_params().values()]
    rng = np.random.RandomState(timing.SEED)
    x = nd.array(rng.uniform(-1, 1, (W3_BATCH, W3_SIZES[0])).astype(np.float32))
    y = nd.array(rng.randint(0, W3_SIZES[-1], W3_BATCH).astype(np.float32))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def setup(hybrid=False):
        net = w3_net()
        net.initialize()
        for p, v in zip(net.collect_params().values(), weights):
            p.set_data(v)
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        return net, gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": W3_LR})

    def step(net, trainer, x, y):
        with autograd.record():
            loss = loss_fn(net(x), y).mean()
        loss.backward()
        trainer.step(1)
        return loss

    fstep = minpy_jit.function(step)
    nets = {m: setup(m == "hybrid") for m in ("eager", "hybrid", "jit", "function")}

    def run(mode):
        net, trainer = nets[mode]
        if mode == "jit":
            with minpy_jit.jit():
                loss = step(net, trainer, x, y)
        elif mode == "function":
            loss = fstep(net, trainer, x, y)
        else:
            loss = step(net, trainer, x, y)
        nd.waitall()
        return loss

    for _ in range(3):
        losses = {m: run(m).asscalar() for m in nets}
    ref = [p.data().asnumpy() for p in nets["eager"][0].collect_params().values()]
    for m in ("hybrid", "jit", "function"):
        for a, b in zip(ref, nets[m][0].collect_params().values()):
            assert np.allclose(a, b.data().asnumpy(), rtol=1e-4, atol=1e-5), m
        assert np.isclose(losses[m], losses["eager"], rtol=1e-4), (m, losses)
    fns = {m: (lambda m=m: run(m)) for m in nets}
    res = timing.compare(fns)
    return {"workload": "W3 MLP train step", "unit": "ms/step", "scale": 1e3, "res": res, "fns": fns,
            "target": "function >= 1.3x faster than jit(), no slower than hybridized"}


# ------------------------------------------------------------------ guards
def bench_guards():
    @minpy_jit.function
    def ten(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9):
        return a0 + a9

    args = [nd.ones((4, 4)) * i for i in range(10)]
    ten(*args).wait_to_read()
    ten(*args).wait_to_read()
    frag = ten.fragments[0]
    ns = []
    for _ in range(timing.REPEATS):
        ns.append(minpy_jit._core.fragment_guard_bench(frag.handle, tuple(args), 20000))
    assert all(n > 0 for n in ns), "guards failed on their own arguments"
    call = timing.bench(lambda: ten(*args), name="call")
    return {"workload": "guard check, 10 arrays", "guard_ns": float(np.median(ns)),
            "call_us": call.median * 1e6, "target": "< 2 us a check"}


# ------------------------------------------------------------------ breakdown
def operator_times(text, calls):
    """ms per call of each operator in the 'operator' table of profiler.dumps()."""
    times = {}
    for line in text[text.index("\noperator"):].splitlines():
        m = re.match(r"(\S.*?)\s{2,}(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+$", line)
        if m and m.group(1) not in ("WaitForVar", "DeleteVariable"):
            times[m.group(1)] = float(m.group(3)) / calls
    return times


def breakdown(name, fn, calls=100):
    for _ in range(5):
        fn()
    nd.waitall()
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=os.devnull)
    profiler.set_state("run")
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    nd.waitall()
    wall, cpu = (time.perf_counter() - t0) / calls * 1e3, (time.process_time() - c0) / calls * 1e3
    profiler.set_state("stop")
    ops = operator_times(profiler.dumps(reset=True), calls)
    total = sum(ops.values())
    print("  %-28s wall %8.3f ms  cpu %8.3f ms  operators %8.3f ms (%3.0f%% of wall) a call"
          % (name, wall, cpu, total, 100 * total / wall if wall else 0))
    for op, ms in sorted(ops.items(), key=lambda kv: -kv[1])[:5]:
        print("      %-40s %8.3f ms" % (op[:40], ms))


def thread_split(fn, calls=100):
    """Per call: wall, process CPU, and the Python thread's CPU (time.thread_time) of `calls` calls."""
    for _ in range(5):
        fn()
    nd.waitall()
    rows = []
    for _ in range(timing.REPEATS):
        t0, c0, p0 = time.perf_counter(), time.process_time(), time.thread_time()
        for _ in range(calls):
            fn()
        nd.waitall()
        rows.append(((time.perf_counter() - t0) / calls, (time.process_time() - c0) / calls,
                     (time.thread_time() - p0) / calls))
    wall, cpu, py = (float(np.median([r[k] for r in rows])) for k in range(3))
    return wall, cpu, py


def main():
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    print("@minpy_jit.function: W1, W3, W4 decorated, each against eager, hybridized and jit() in one run")
    timing.print_env()
    if "--cpu" in sys.argv:
        print("clock: process CPU time per call, all threads (--cpu), not wall time")
    print()
    rows, summary, measured = [], [], []
    for key, fn in (("w1", bench_w1), ("w3", bench_w3), ("w4", bench_w4)):
        if only and key not in only:
            continue
        r = fn()
        measured.append(r)
        res, k = r["res"], r["scale"]
        med = {m: res[m].median * k for m in res}
        rows.append([r["workload"], r["unit"]] + ["%.3f" % med[m] for m in ("eager", "hybrid", "jit", "function")]
                    + [timing.ratio(med["hybrid"], med["function"]), timing.ratio(med["jit"], med["function"]),
                       "%.0f%%" % (100 * res["function"].spread)])
        summary.append(dict(workload=r["workload"], unit=r["unit"], eager=med["eager"], hybrid=med["hybrid"],
                            jit=med["jit"], function=med["function"], target=r["target"]))
    if rows:
        timing.table(rows, ["workload", "unit", "eager", "hybridized", "jit()", "@function", "hybrid/function",
                            "jit/function", "spread"])
    if "--breakdown" in sys.argv and measured:
        print()
        print("where the time of a call goes (MXNet profiler on, engine bulking off: not the timing above)")
        for r in measured:
            for mode in ("function", "jit"):
                breakdown("%s %s" % (r["workload"].split()[0], mode), r["fns"][mode])
    if "--threads" in sys.argv and measured:
        print()
        print("CPU time per call by thread (medians of %d x 100 calls, ms; --threads): python = the Python thread, "
              "rest = MXNet's engine worker and our helpers" % timing.REPEATS)
        trows = []
        for r in measured:
            k = r["scale"]
            split = {m: thread_split(r["fns"][m], calls=100 if k >= 1e3 else 1000)
                     for m in ("eager", "hybrid", "jit", "function")}
            for m, (wall, cpu, py) in split.items():
                trows.append([r["workload"].split()[0], m, "%.3f" % (wall * k), "%.3f" % (cpu * k), "%.3f" % (py * k),
                              "%.3f" % ((cpu - py) * k), "%.3f" % (max(py, cpu - py) * k)])
            jw, jc, jp = split["jit"]
            fw, fc, _ = split["function"]
            trows.append([r["workload"].split()[0], "jit/function", "%.2fx" % (jw / fw), "%.2fx" % (jc / fc), "", "",
                          "%.2fx" % (max(jp, jc - jp) / fc)])
        timing.table(trows, ["workload", "mode", "wall", "cpu", "python", "rest", "bound"])
    if not only or "guards" in only:
        g = bench_guards()
        print()
        print("guard check on a function of 10 array arguments: %.0f ns a check (C++ loop, median of %d x 20000); "
              "a whole call of the decorated function (guards + one graph launch): %.2f us"
              % (g["guard_ns"], timing.REPEATS, g["call_us"]))
        summary.append(dict(workload=g["workload"], guard_ns=g["guard_ns"], call_us=g["call_us"],
                            target=g["target"]))
    print()
    for s in summary:
        print("target %s: %s" % (s["workload"], s["target"]))
    st = minpy_jit._core.fragment_stats()
    print("fragment counters over the run: %s" % st)
    timing.write_summary(timing.summary_arg(), dict(workload="@function", rows=summary))


if __name__ == "__main__":
    main()
