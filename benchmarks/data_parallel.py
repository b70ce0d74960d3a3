"""Data-parallel training: the W3 MLP step (Gluon + Trainer) on 1 context, on 2 contexts in
one process, and as 2 dist_sync workers (+1 server on loopback), eager vs jit(), in one run;
then how the cost of a step grows with the number of parameter arrays pushed (50, 200, 800).

    .venv/bin/python benchmarks/data_parallel.py [--quick] [--skip-dist] [--rounds N] [--json out.json]
        [--skip-single] [--skip-sweep] [--dist-optimizer sgd|adam] [--dist-update-on server|workers|both]
        [--python-server-updater]

W3: batch 64 (32 per context or worker), 784-256-256-10, ReLU, softmax cross-entropy (mean),
plain SGD lr 0.1. The per-sample losses are summed by backward and the Trainer divides by 64,
which is the mean over the whole batch however it is split. Every single-process setup first
trains CHECK_STEPS steps from the reference's initial weights and is checked against the
float64 NumPy reference (reference.py); jit() must also equal eager (the table says whether bit for
bit or only within 1e-5). The dist_sync jobs run
one mode each, eager (no minpy_jit scope: MXNet alone, its server included) and jit() (the
kvstore initialised inside the scope, so the server runs our C updater (SGD here; Adam with
--dist-optimizer adam; --python-server-updater keeps MXNet's Updater on the servers):
minpy_jit/server_updates.py), alternately, --rounds jobs per mode; every worker of every job
must end with the same weights, bit for bit.

Reported per setup: ms per step and steps/s (medians of interleaved repeats; a timed call is 5 steps in a row
then nd.waitall(), so that kvstore traffic may overlap the next step as it does in a training loop), the ratio of
eager's time to jit()'s, jit()'s cache misses after its second step (0 = no recompiles in the
steady state), the CPU time the process spent per step on all its threads (for the dist job:
both workers' together; less noisy than wall time when the machine is shared), and
"kvstore+update ms": the time of trainer.step() alone with the engine drained before and after (gradient reduction through the kvstore and the update; overlap
hidden by the drain, so it is an upper bound of what a free-running step pays for it). For the dist jobs a
second table splits the step: forward+backward alone (drained), trainer.step() alone (drained: the
kvstore round trip, which waits for the other worker and the server), and the CPU time the server
process spent per step (read from /proc: the job runs on this machine), which shows where the
optimizer runs: with the update on the server, the eager job's server calls MXNet's Python
optimizer once per key, the jit() job's runs our C updater (the last column says which ran).
The sweep times both update_on_kvstore settings.

Both contexts of a process are CPUs: cpu(0) and cpu(1) are two engine worker threads sharing
this machine's cores, not two devices. The dist workers and the server share them as well.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import mxnet as mx  # noqa: E402  (a dist job's scheduler and server stay in here)
import numpy as np  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

import minpy_jit  # noqa: E402
import reference  # noqa: E402
import timing  # noqa: E402
from minpy_jit import launcher  # noqa: E402

BATCH = reference.W3["batch"]
SIZES = reference.W3["sizes"]
LR = reference.W3["lr"]
MODES = ("eager", "jit")
ARRAY_COUNTS = (50, 200, 800)
SMALL = 16  # width of the layers of the parameter-count sweep
STEPS_PER_CALL = 5  # a timed call: this many steps, then nd.waitall()
# The dist jobs' optimizer (--dist-optimizer): W3's SGD, or Adam (which the servers' C updater
# does not cover: its servers run MXNet's Python Updater in both modes)
DIST_OPTIMIZERS = {"sgd": {"learning_rate": LR}, "adam": {"learning_rate": 0.001}}


def w3_net(ctx):
    net = nn.HybridSequential()
    for i, (nin, nout) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        net.add(nn.Dense(nout, in_units=nin, activation=None if i == len(SIZES) - 2 else "relu"))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    weights, biases, _, _ = reference.w3_inputs()
    for p, v in zip(net.collect_params().values(), [a for wb in zip(weights, biases) for a in wb]):
        p.set_data(nd.array(v))
    return net


def w3_data():
    _, _, x, labels = reference.w3_inputs()
    return x, labels.astype(np.float32)


def sweep_net(ctx, arrays):
    """arrays/2 Dense(16) layers (a weight and a bias each) with ReLU between them."""
    net = nn.HybridSequential()
    for _ in range(arrays // 2):
        net.add(nn.Dense(SMALL, in_units=SMALL, activation="relu"))
    mx.random.seed(1)
    net.initialize(mx.init.Xavier(magnitude=1.0), ctx=ctx)
    return net


class Setup:
    """One model and Trainer on a list of contexts, stepped eagerly or inside jit()."""

    def __init__(self, mode, ctx, net, x, y, trainer_kw, trainer=None):
        self.mode, self.ctx, self.net = mode, ctx, net
        self.trainer = trainer or gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR}, **trainer_kw)
        self.lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
        n = len(ctx)
        per = len(x) // n
        self.xs = [nd.array(x[i * per:(i + 1) * per], ctx=c) for i, c in enumerate(ctx)]
        self.ys = [nd.array(y[i * per:(i + 1) * per], ctx=c) for i, c in enumerate(ctx)]
        self.batch = len(x)

    def _forward_backward(self):
        with autograd.record():
            losses = [self.lossfn(self.net(a), b) for a, b in zip(self.xs, self.ys)]
        for loss in losses:
            loss.backward()
        return losses

    def _scope(self):
        return minpy_jit.jit(site="data_parallel.%s" % id(self)) if self.mode == "jit" else _Nothing()

    def step(self):
        with self._scope():
            losses = self._forward_backward()
            self.trainer.step(self.batch)
        nd.waitall()
        return losses

    def steps(self, k=STEPS_PER_CALL):
        """k steps in a row, then the engine drained: nothing in between waits, so a step's
        kvstore traffic and update may overlap the next step's graphs as MXNet's engine allows.
        self.enqueue_s: how long the k steps took the Python thread, before the drain."""
        t0 = time.perf_counter()
        for _ in range(k):
            with self._scope():
                self._forward_backward()
                self.trainer.step(self.batch)
        self.enqueue_s = time.perf_counter() - t0
        nd.waitall()

    def fenced_forward_backward(self):
        """Seconds of forward and backward alone, the engine drained before and after."""
        with self._scope():
            nd.waitall()
            t0 = time.perf_counter()
            self._forward_backward()
            nd.waitall()
            dt = time.perf_counter() - t0
            self.trainer.step(self.batch)
        nd.waitall()
        return dt

    def fenced_update(self):
        """Seconds of trainer.step() alone, the engine drained before and after."""
        with self._scope():
            self._forward_backward()
            nd.waitall()
            t0 = time.perf_counter()
            self.trainer.step(self.batch)
            nd.waitall()
            return time.perf_counter() - t0

    def weights(self, ctx=None):
        return [p.data(ctx or self.ctx[0]).asnumpy() for p in self.net.collect_params().values()]


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def with_cpu_time(fn, log):
    """fn as a timing section (returns its wall seconds) that also logs the CPU seconds this
    process spent meanwhile, on all its threads (MXNet's engine workers included): on a
    machine shared with other work, CPU time varies less than wall time."""
    def section():
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        log.append(time.process_time() - c0)
        return wall
    return section


def cpu_cell(cpu_ms):
    """'eager / jit (ratio)' CPU ms per step: the ratio of CPU times is steadier than the ratio of
    wall times when other work shares the cores."""
    return "%.2f / %.2f (%s)" % (cpu_ms["eager"], cpu_ms["jit"], timing.ratio(cpu_ms["eager"], cpu_ms["jit"]))


def agreement(eager, jit):
    """'bit for bit', 'within 1e-5' (rtol; atol 1e-6) or '' (they differ more) for two lists of
    weights: jit() is meant to equal eager bit for bit; the looser check says how far it is off."""
    if all(np.array_equal(a, b) for a, b in zip(eager, jit)):
        return "bit for bit"
    return "within 1e-5" if all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(eager, jit)) else ""


def misses_after_step_two(setup, steps=8):
    """jit(): cache misses over `steps` more steps once two have run (the steady state)."""
    for _ in range(2):
        setup.step()
    before = minpy_jit.stats()["cache_misses"]
    for _ in range(steps):
        setup.step()
    return minpy_jit.stats()["cache_misses"] - before


# ------------------------------------------------------------------------------ single process

W3_SETUPS = [
    ("1 context", [mx.cpu(0)], {}),
    ("2 contexts, kvstore 'device' (update on kvstore)", [mx.cpu(0), mx.cpu(1)], {}),
    ("2 contexts, kvstore 'device', update_on_kvstore=False", [mx.cpu(0), mx.cpu(1)],
     {"update_on_kvstore": False}),
]


def w3_checked(name, ctx, kw):
    """Eager and jit() setups for one configuration, trained CHECK_STEPS steps and checked."""
    x, y = w3_data()
    setups = {m: Setup(m, ctx, w3_net(ctx), x, y, kw) for m in MODES}
    checks = {}
    for m, s in setups.items():
        losses = []
        for _ in range(reference.CHECK_STEPS):
            per_ctx = s.step()
            losses.append(sum(float(l.sum().asscalar()) for l in per_ctx) / BATCH)
        w = s.weights()
        checks[m] = reference.check("W3", reference.w3_result(losses, w[0::2], w[1::2]))
        for c in ctx[1:]:  # every context holds the same weights
            same = all(np.array_equal(a, b) for a, b in zip(w, s.weights(c)))
            if not same:
                checks[m] = dict(checks[m], ok=False, detail="contexts disagree")
    agree = agreement(setups["eager"].weights(), setups["jit"].weights())
    return setups, checks, agree


def run_single_process(quick):
    rows, summary = [], {}
    all_setups = {}
    for name, ctx, kw in W3_SETUPS:
        setups, checks, agree = w3_checked(name, ctx, kw)
        misses = misses_after_step_two(setups["jit"])
        all_setups[name] = setups
        summary[name] = dict(checks=checks, jit_equals_eager=bool(agree), jit_bit_exact=agree == "bit for bit",
                             misses_after_step_2=misses)
    cpu = {}
    fns = {(n, m): with_cpu_time(s.steps, cpu.setdefault((n, m), [])) for n, setups in all_setups.items()
           for m, s in setups.items()}
    res = timing.compare(fns, repeats=7 if quick else 15, sections=True)
    fenced = timing.compare({k: all_setups[k[0]][k[1]].fenced_update for k in fns}, sections=True,
                            repeats=7, target=0.04)
    for name, _, _ in W3_SETUPS:
        ms = {m: res[(name, m)].median * 1e3 / STEPS_PER_CALL for m in MODES}
        cpu_ms = {m: statistics.median(cpu[(name, m)]) * 1e3 / STEPS_PER_CALL for m in MODES}
        kv = {m: fenced[(name, m)].median * 1e3 for m in MODES}
        s = summary[name]
        ok = all(c["ok"] for c in s["checks"].values()) and s["jit_equals_eager"]
        s.update(ms=ms, cpu_ms=cpu_ms, kvstore_update_ms=kv, ratio=ms["eager"] / ms["jit"], correct=ok)
        rows.append([name, "%.3f" % ms["eager"], "%.3f" % ms["jit"], "%.0f" % (1e3 / ms["eager"]),
                     "%.0f" % (1e3 / ms["jit"]), timing.ratio(ms["eager"], ms["jit"]),
                     cpu_cell(cpu_ms), str(s["misses_after_step_2"]),
                     "%.3f / %.3f" % (kv["eager"], kv["jit"]),
                     ("yes, jit equals eager " + ("bit for bit" if s["jit_bit_exact"] else "within 1e-5")) if ok
                     else "NO: " + _why(s)])
    return rows, summary


def _why(s):
    bad = [m + ": " + c["detail"] for m, c in s["checks"].items() if not c["ok"]]
    if not s["jit_equals_eager"]:
        bad.append("jit weights differ from eager")
    return "; ".join(bad)


# ------------------------------------------------------------------------------ dist_sync workers

def dist_worker(out_dir, repeats, inner, update_on, mode, optimizer="sgd", server_updater="c"):
    """One worker of a dist job that steps W3 on its half of the batch in one mode: eager (no
    minpy_jit scope anywhere: what MXNet alone does, its servers included) or jit() (the kvstore
    initialised inside the scope, as a Trainer's first step inside jit() does it, so that the
    servers run our C updater: minpy_jit/server_updates.py). Both workers run the same
    sequence (dist_sync steps in lockstep): blocks of `inner` steps timed, then fenced
    forward+backward and trainer.step() times. update_on: 'server' (the Trainer's default for
    dist kvstores: the servers run the optimizer) or 'workers' (update_on_kvstore=False: the
    servers sum the gradients, each worker updates). Writes rank<r>.json and rank<r>.npz (the
    final weights, compared across the eager and jit() jobs)."""
    if server_updater != "c":  # the servers keep MXNet's Python Updater under jit() too
        from minpy_jit import server_updates
        server_updates.supported = lambda optimizer: False
    kv = mx.kv.create("dist_sync")
    rank, workers = kv.rank, kv.num_workers
    x, y = w3_data()
    per = BATCH // workers
    x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
    net = w3_net([mx.cpu()])
    trainer = gluon.Trainer(net.collect_params(), optimizer, DIST_OPTIMIZERS[optimizer], kvstore=kv,
                            update_on_kvstore=None if update_on == "server" else False)
    # The kvstore initialised before the first step, with a wait for rank 0's push of the
    # weights before the barrier (MXNet's lazy initialisation does not wait: see README).
    with minpy_jit.jit() if mode == "jit" else _Nothing():
        trainer._check_and_rescale_grad(trainer._scale / BATCH)
        trainer._init_kvstore()
        trainer._init_params()
    nd.waitall()
    kv._barrier()
    setup = Setup(mode, [mx.cpu()], net, x, y, {}, trainer=trainer)
    setup.batch = BATCH
    for _ in range(3):
        setup.step()
    misses = misses_after_step_two(setup)  # 10 steps in eager too: both jobs train the same steps
    minpy_jit.reset_stats()
    per_step, cpu, enqueue = [], [], []
    servers = local_server_pids() if rank == 0 else []
    server_cpu = 0.0  # summed over all blocks: /proc counts in clock ticks (10 ms)
    for _ in range(repeats):
        s0 = sum(cpu_seconds(p) for p in servers)
        per_step.append(with_cpu_time(lambda: setup.steps(inner), cpu)() / inner * 1e3)
        enqueue.append(setup.enqueue_s / inner * 1e3)
        server_cpu += sum(cpu_seconds(p) for p in servers) - s0
    st = minpy_jit.stats()
    kv_ms, fb_ms = [], []
    for _ in range(repeats):
        kv_ms.append(setup.fenced_update() * 1e3)
        fb_ms.append(setup.fenced_forward_backward() * 1e3)
    weights = setup.weights()
    np.savez(os.path.join(out_dir, "rank%d.npz" % rank), *weights)
    result = dict(rank=rank, mode=mode, ms=statistics.median(per_step), enqueue_ms=statistics.median(enqueue),
                  cpu_ms=statistics.median(cpu) / inner * 1e3,
                  spread=(max(per_step) - min(per_step)) / statistics.median(per_step),
                  kvstore_update_ms=statistics.median(kv_ms), forward_backward_ms=statistics.median(fb_ms),
                  server_cpu_ms=server_cpu / (repeats * inner) * 1e3 if servers else None,
                  misses_after_step_2=misses if mode == "jit" else None, kvstore_stats=st["kvstore"],
                  flushes=st["flushes"])
    with open(os.path.join(out_dir, "rank%d.json" % rank), "w") as f:
        json.dump(result, f)


def local_server_pids():
    """The pids of this job's servers when they run on this machine (Linux /proc; the launcher
    started them with this job's DMLC_PS_ROOT_PORT and DMLC_ROLE=server), else []."""
    port = os.environ.get("DMLC_PS_ROOT_PORT", "").encode()
    pids = []
    for pid in os.listdir("/proc") if port and os.path.isdir("/proc") else []:
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = set(f.read().split(b"\0"))
        except (OSError, ValueError):
            continue
        if b"DMLC_ROLE=server" in env and b"DMLC_PS_ROOT_PORT=" + port in env:
            pids.append(int(pid))
    return pids


def cpu_seconds(pid):
    """User + system CPU seconds of a process, all threads (/proc/<pid>/stat)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dist_job(quick, update_on, mode, optimizer="sgd", server_updater="c"):
    """One job (scheduler, 1 server, 2 workers) in one mode: each rank's result and weights."""
    out = tempfile.mkdtemp(prefix="minpy_dp_")
    repeats, inner = (7, 10) if quick else (9, 20)
    cmd = [sys.executable, os.path.abspath(__file__), "--dist-worker", out, str(repeats), str(inner), update_on, mode,
           optimizer, server_updater]
    env = {"PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = launcher.run(cmd, num_workers=2, num_servers=1, timeout=900, env=env, capture=True, check=False)
    if res.error:
        tail = "\n".join("[%s] %s" % (n, l) for n, lines in res.output.items() for l in lines[-10:])
        raise SystemExit("dist job failed: %s\n%s" % (res.error, tail))
    ranks = [json.load(open(os.path.join(out, "rank%d.json" % r))) for r in range(2)]
    weights = []
    for r in range(2):
        with np.load(os.path.join(out, "rank%d.npz" % r)) as z:
            weights.append([z["arr_%d" % i] for i in range(len(z.files))])
    server_lines = [l for n, lines in res.output.items() if n.startswith("server") for l in lines]
    c_updater = any("runs the C updater" in l for l in server_lines)
    return dict(ranks=ranks, weights=weights, c_updater=c_updater, repeats=repeats, inner=inner)


def run_dist(quick, update_on, rounds, optimizer="sgd", server_updater="c"):
    """Eager and jit() jobs alternately, `rounds` of each (a job runs one mode: its servers
    serve that mode only); per mode the median over its jobs of the slower worker's median."""
    jobs = {m: [] for m in MODES}
    for _ in range(rounds):
        for m in MODES:
            jobs[m].append(dist_job(quick, update_on, m, optimizer, server_updater))
    ref = jobs["eager"][0]["weights"][0]
    # dist_sync: every worker of every job pulls the same weights after the same steps
    agree = all(all(np.array_equal(a, b) for a, b in zip(w, ref))
                for js in jobs.values() for j in js for w in j["weights"])

    def med(field, pick):
        return {m: statistics.median(pick(r[field] for r in j["ranks"]) for j in js) for m, js in jobs.items()}

    ms = med("ms", max)  # a step ends when the slower worker's does
    cpu_ms = med("cpu_ms", sum)  # both workers' CPU per step
    kv = med("kvstore_update_ms", max)
    fb = med("forward_backward_ms", statistics.mean)
    kv_mean = med("kvstore_update_ms", statistics.mean)
    enqueue = med("enqueue_ms", statistics.mean)
    ms_mean = med("ms", statistics.mean)
    # rank 0 reads the server's CPU time from /proc (None if the server is not on this machine)
    server = None if jobs["eager"][0]["ranks"][0]["server_cpu_ms"] is None else \
        {m: statistics.median(j["ranks"][0]["server_cpu_ms"] for j in js) for m, js in jobs.items()}
    misses = max(r["misses_after_step_2"] for j in jobs["jit"] for r in j["ranks"])
    c_updater = {m: [j["c_updater"] for j in js] for m, js in jobs.items()}
    name = {"server": "2 dist_sync workers + 1 server (update on the server)",
            "workers": "2 dist_sync workers + 1 server, update_on_kvstore=False"}[update_on]
    if optimizer != "sgd":
        name += ", %s" % optimizer
    if server_updater != "c":
        name += ", servers on MXNet's Updater"
    row = [name, "%.3f" % ms["eager"], "%.3f" % ms["jit"], "%.0f" % (1e3 / ms["eager"]), "%.0f" % (1e3 / ms["jit"]),
           timing.ratio(ms["eager"], ms["jit"]), cpu_cell(cpu_ms), str(misses),
           "%.3f / %.3f" % (kv["eager"], kv["jit"]),
           "yes (jobs and workers agree)" if agree else "NO: weights differ between jobs or workers"]
    phase_row = [name, "%.3f / %.3f" % (fb["eager"], fb["jit"]), "%.3f / %.3f" % (kv_mean["eager"], kv_mean["jit"]),
                 "%.3f / %.3f" % (ms_mean["eager"], ms_mean["jit"]), "%.3f / %.3f" % (enqueue["eager"], enqueue["jit"]),
                 "%.2f / %.2f" % (server["eager"], server["jit"]) if server else "n/a",
                 "%s / %s" % (_yes_no(c_updater["eager"]), _yes_no(c_updater["jit"]))]
    summary = dict(ms=ms, cpu_ms=cpu_ms, kvstore_update_ms=kv, forward_backward_ms=fb, server_cpu_ms=server,
                   enqueue_ms=enqueue,
                   ratio=ms["eager"] / ms["jit"], workers_agree=agree, c_updater=c_updater,
                   per_job={m: [j["ranks"] for j in js] for m, js in jobs.items()},
                   repeats=jobs["eager"][0]["repeats"], inner=jobs["eager"][0]["inner"], rounds=rounds)
    return row, phase_row, summary


def _yes_no(flags):
    return "yes" if all(flags) else "no" if not any(flags) else "some jobs"


# ------------------------------------------------------------------------------ arrays pushed

def run_sweep(quick):
    rows, summary = [], {}
    ctx = [mx.cpu(0), mx.cpu(1)]
    rs = np.random.RandomState(4)
    x = rs.uniform(-1, 1, (BATCH, SMALL)).astype(np.float32)
    y = rs.randint(0, SMALL, BATCH).astype(np.float32)
    for arrays, uok in [(a, u) for a in ARRAY_COUNTS for u in (True, False)]:
        kw = {} if uok else {"update_on_kvstore": False}
        setups = {m: Setup(m, ctx, sweep_net(ctx, arrays), x, y, kw) for m in MODES}
        for _ in range(2):
            for s in setups.values():
                s.step()
        agree = agreement(setups["eager"].weights(), setups["jit"].weights())
        res = timing.compare({m: s.step for m, s in setups.items()}, repeats=7, warmup=2)  # one step a call
        fenced = timing.compare({m: s.fenced_update for m, s in setups.items()}, sections=True, repeats=7,
                                warmup=1, target=0.04)
        ms = {m: res[m].median * 1e3 for m in MODES}
        kv = {m: fenced[m].median * 1e3 for m in MODES}
        summary["%d%s" % (arrays, "" if uok else " update_on_kvstore=False")] = dict(
            ms=ms, kvstore_update_ms=kv, jit_equals_eager=bool(agree), jit_bit_exact=agree == "bit for bit")
        rows.append([str(arrays), "kvstore" if uok else "Trainer", "%.2f" % ms["eager"], "%.2f" % ms["jit"], timing.ratio(ms["eager"], ms["jit"]),
                     "%.2f / %.2f" % (kv["eager"], kv["jit"]), "%.1f / %.1f" % (kv["eager"] / arrays * 1e3,
                                                                              kv["jit"] / arrays * 1e3),
                     agree or "NO"])
    return rows, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--json")
    ap.add_argument("--skip-dist", action="store_true")
    ap.add_argument("--skip-single", action="store_true", help="no 1- and 2-context setups")
    ap.add_argument("--skip-sweep", action="store_true", help="no parameter-count sweep")
    ap.add_argument("--rounds", type=int, default=2, help="dist jobs per mode (alternating eager, jit())")
    ap.add_argument("--dist-optimizer", choices=sorted(DIST_OPTIMIZERS), default="sgd",
                    help="the dist jobs' optimizer (default W3's sgd)")
    ap.add_argument("--dist-update-on", choices=("server", "workers", "both"), default="both",
                    help="which dist jobs: the update on the server, on the workers, or both (default)")
    ap.add_argument("--python-server-updater", action="store_true",
                    help="the jit() dist jobs' servers keep MXNet's Python Updater (to measure what ours saves)")
    args = ap.parse_args()

    print("Data-parallel W3 (batch %d, %s, ReLU, softmax CE mean, SGD lr %g; Gluon + Trainer), eager vs jit()"
          % (BATCH, "-".join(map(str, SIZES)), LR))
    timing.print_env()
    print("contexts cpu(0), cpu(1): two MXNet engine worker threads on the same %s cores; the dist job's "
          "5 processes (scheduler, server, 2 workers, this one) share them too" % os.cpu_count())
    print()
    rows, single = run_single_process(args.quick) if not args.skip_single else ([], {})
    dist, phase_rows = {}, []
    if not args.skip_dist:
        for update_on in ("server", "workers") if args.dist_update_on == "both" else (args.dist_update_on,):
            row, phase_row, dist[update_on] = run_dist(args.quick, update_on, args.rounds, args.dist_optimizer,
                                                       "python" if args.python_server_updater else "c")
            rows.append(row)
            phase_rows.append(phase_row)
    headers = ["setup", "eager ms", "jit ms", "eager steps/s", "jit steps/s", "eager/jit",
               "CPU ms/step (eager / jit)", "jit misses after step 2",
               "kvstore+update ms (eager / jit)", "correct"]
    timing.table(rows, headers)
    if phase_rows:
        print()
        print("Where a dist_sync step goes (eager / jit; ms per step, medians, mean of the two workers): "
              "forward+backward and trainer.step() each alone with the engine drained; the server's CPU time "
              "per free-running step (all timed steps)")
        timing.table(phase_rows, ["setup", "forward+backward ms", "trainer.step() ms (kvstore round trip + update)",
                                  "free-running step ms", "Python thread ms/step", "server CPU ms/step",
                                  "server ran our C updater"])
        print("(a free-running step shorter than forward+backward + trainer.step(), each drained, is the overlap "
              "MXNet's engine gives; the Python thread's time per free-running step, before the final drain, "
              "below the step's time means it never waited for the kvstore and ran ahead)")
    print()
    for update_on, d in dist.items():
        print("dist workers (update on the %s): kvstore calls in jit() over the timed steps (rank 0, first job): %s"
              % (update_on, d["per_job"]["jit"][0][0]["kvstore_stats"]))
    print()
    sweep_rows, sweep = run_sweep(args.quick) if not args.skip_sweep else ([], {})
    if sweep_rows:
        print("Step cost vs parameter arrays pushed: 2 contexts, kvstore 'device', the update on the kvstore (the "
              "default) or in the Trainer (update_on_kvstore=False), Dense(%d) layers with ReLU, batch %d" % (SMALL, BATCH))
        timing.table(sweep_rows, ["arrays", "update in", "eager ms/step", "jit ms/step", "eager/jit",
                                  "kvstore+update ms (eager / jit)", "per array us (eager / jit)", "jit equals eager"])
    timing.write_summary(args.json, dict(single=single, dist=dist, sweep=sweep))
    bad = [n for n, s in single.items() if not s["correct"]]
    bad += ["dist (update on the %s)" % k for k, d in dist.items() if not d["workers_agree"]]
    bad += ["sweep %s" % k for k, v in sweep.items() if not v["jit_equals_eager"]]
    if bad:
        print("FAILED checks: %s" % ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--dist-worker":
        dist_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8])
    else:
        sys.exit(main())
