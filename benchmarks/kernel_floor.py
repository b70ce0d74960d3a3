"""Where W3's and W4's time goes once Python is out of the way: MXNet's operators.

W3 (the Gluon MLP step: forward, backward, trainer.step) and W4 (50 LSTM cell steps) run as
@minpy_jit.function, whose replay is one C++ call per fragment; the step then costs what its
graph's operators cost in MXNet, plus the engine's pushes. This script runs each under MXNet's
profiler (aggregate statistics, operators only) and prints, per step, the milliseconds spent in
each operator, their sum and the wall time of the same steps. For W3 it also prints the GEMM
rate of the FullyConnected forward and backward kernels, MXNet's and ours (_minpy_fc, the
README's gemm stage), together (the step's FLOPs over their time)
next to NumPy's single-precision GEMM on W3's first layer, measured in the same process: the
rate the machine's two cores give a well-tuned GEMM.

    .venv/bin/python benchmarks/kernel_floor.py [--steps 200]

Per-step operator times come from the profiler, which adds a little time per operator; the
wall times are taken in a separate, unprofiled loop.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import rnn  # noqa: E402

import function_workloads as fw  # noqa: E402
import minpy_jit  # noqa: E402
import timing  # noqa: E402


def profile(run, steps):
    """{operator: ms per step} over `steps` calls of run(), and the wall ms per step unprofiled."""
    for _ in range(20):
        run()
    t = time.perf_counter()
    for _ in range(steps):
        run()
    wall = (time.perf_counter() - t) / steps * 1e3
    mx.profiler.set_config(profile_imperative=True, profile_symbolic=True, aggregate_stats=True,
                           filename=os.devnull)
    mx.profiler.dumps(reset=True)
    mx.profiler.set_state("run")
    for _ in range(steps):
        run()
    mx.profiler.set_state("stop")
    stats = json.loads(mx.profiler.dumps(format="json", reset=True))["Time"].get("operator", {})
    ops = {name: s["Total"] / steps for name, s in stats.items()
           if name not in ("WaitForVar", "DeleteVariable")}
    return ops, wall


def report(title, ops, wall):
    print("%s: wall %.3f ms a step, operators %.3f ms" % (title, wall, sum(ops.values())))
    for name, ms in sorted(ops.items(), key=lambda kv: -kv[1]):
        if ms >= 0.001:
            shown = name if len(name) <= 60 else name[:57] + "..."
            print("  %-60s %8.3f ms" % (shown, ms))


def w3(steps):
    timing.seed_all()
    net = fw.w3_net()
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": fw.W3_LR})
    rng = np.random.RandomState(timing.SEED)
    x = nd.array(rng.uniform(-1, 1, (fw.W3_BATCH, fw.W3_SIZES[0])).astype(np.float32))
    y = nd.array(rng.randint(0, fw.W3_SIZES[-1], fw.W3_BATCH).astype(np.float32))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    @minpy_jit.function
    def step(x, y):
        with autograd.record():
            loss = loss_fn(net(x), y).mean()
        loss.backward()
        trainer.step(1)
        return loss

    def run():
        step(x, y)
        nd.waitall()

    ops, wall = profile(run, steps)
    report("W3 @function (batch %d, %s)" % (fw.W3_BATCH, "-".join(map(str, fw.W3_SIZES))), ops, wall)
    # FLOPs: forward x.W for each layer; backward dW for each layer and dX for all but the first.
    b, sizes = fw.W3_BATCH, fw.W3_SIZES
    layers = list(zip(sizes[:-1], sizes[1:]))
    fwd = sum(2 * b * i * o for i, o in layers)
    bwd = fwd + sum(2 * b * i * o for i, o in layers[1:])
    # MXNet's FullyConnected or our _minpy_fc (the gemm stage: W3's two large layers)
    fc = sum(ms for name, ms in ops.items() if name in ("FullyConnected", "_minpy_fc"))
    fc_bwd = sum(ms for name, ms in ops.items() if name in ("_backward_FullyConnected", "_backward__minpy_fc"))
    a = np.random.RandomState(0).uniform(-1, 1, (b, sizes[0])).astype(np.float32)
    w = np.random.RandomState(1).uniform(-1, 1, (sizes[0], sizes[1])).astype(np.float32)
    best = float("inf")
    for _ in range(20):  # the best batch: the machine is shared
        t = time.perf_counter()
        for _ in range(100):
            a @ w
        best = min(best, (time.perf_counter() - t) / 100)
    np_rate = 2 * b * sizes[0] * sizes[1] / best / 1e9
    if fc and fc_bwd:
        print("  GEMM rate: FullyConnected and _minpy_fc %.0f GFLOP/s, their backward %.0f GFLOP/s; NumPy's sgemm "
              "(%dx%d @ %dx%d) %.0f GFLOP/s" % (fwd / fc / 1e6, bwd / fc_bwd / 1e6, b, sizes[0], sizes[0], sizes[1],
                                                 np_rate))
        print("  the step's GEMMs at NumPy's rate: %.3f ms" % ((fwd + bwd) / np_rate / 1e6))


def w4(steps):
    timing.seed_all()
    cell = rnn.LSTMCell(fw.W4_HIDDEN, input_size=fw.W4_INPUT)
    cell.initialize(mx.init.Xavier())
    rng = np.random.RandomState(timing.SEED)
    xs = [nd.array(rng.uniform(-1, 1, (fw.W4_BATCH, fw.W4_INPUT)).astype(np.float32)) for _ in range(fw.W4_T)]
    h0, c0 = nd.zeros((fw.W4_BATCH, fw.W4_HIDDEN)), nd.zeros((fw.W4_BATCH, fw.W4_HIDDEN))

    @minpy_jit.function
    def sequence(xs, h, c):
        states = [h, c]
        for t in range(fw.W4_T):
            _, states = cell(xs[t], states)
        return states

    def run():
        sequence(xs, h0, c0)[0].wait_to_read()

    ops, wall = profile(run, steps)
    return ops, wall


def w4_report(steps):
    """W4's wall time (bulked, as it runs), then its operators timed one by one in a child process:
    MXNet runs the graph's operators in engine bulks (one profiler entry a bulk) and reads
    MXNET_EXEC_BULK_EXEC_INFERENCE once per process."""
    _, wall = w4(steps)
    env = dict(os.environ, MXNET_EXEC_BULK_EXEC_INFERENCE="0")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--w4-ops", "--steps", str(steps)], env=env,
                         check=True, capture_output=True, text=True).stdout
    report("W4 @function (%d steps, batch %d, hidden %d; operators timed without engine bulking)"
           % (fw.W4_T, fw.W4_BATCH, fw.W4_HIDDEN), json.loads(out), wall)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--w4-ops", action="store_true", help=argparse.SUPPRESS)  # the child of w4_report
    args = ap.parse_args()
    if args.w4_ops:
        print(json.dumps(w4(args.steps)[0]))
        return
    print("threads: MXNET_OMP_MAX_THREADS=%s OMP_NUM_THREADS=%s, load average %s"
          % (os.environ.get("MXNET_OMP_MAX_THREADS", "-"), os.environ.get("OMP_NUM_THREADS", "-"),
             " ".join(open("/proc/loadavg").read().split()[:3])))
    w3(args.steps)
    w4_report(max(args.steps // 10, 10))


if __name__ == "__main__":
    main()
