"""Threads: several threads train their own model, each inside its own jit() scope, while an
eager twin of each model trains on the same batches; per thread the weights must equal eager's.

    PYTHONPATH=. .venv/bin/python tests/stress/threads.py --threads 8 --steps 10000 --json tests/stress/out/threads.json

Each thread owns a small Gluon MLP (its own seed, data and optimizer: sgd, momentum, adam,
rmsprop in turn) and a twin made from the same initial weights; per step it runs the twin
eagerly and the model's step (forward under record(), backward, Trainer.step) in a jit()
scope, and every --check steps compares all weights. A watchdog fails the run if no thread
completes a step for --stall seconds or the whole run exceeds --timeout: it dumps every
thread's stack (faulthandler) and exits with status 2 (a deadlock is a finding). Exit status 1
if any thread's weights differ or a thread raised. Not collected by pytest.
"""
import argparse
import faulthandler
import json
import os
import sys
import threading
import time

import numpy as np

import mxnet as mx
from mxnet import autograd, gluon, nd

import minpy_jit

OPTIMIZERS = [("sgd", {"learning_rate": 0.05}), ("sgd", {"learning_rate": 0.05, "momentum": 0.9}),
              ("adam", {"learning_rate": 0.01}), ("rmsprop", {"learning_rate": 0.01})]


def make_model(seed, opt):
    mx.random.seed(seed)  # the global generator: only the main thread makes models
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(32, in_units=16, activation="relu"), gluon.nn.Dense(4, in_units=32))
    net.initialize(mx.init.Xavier())
    return net


def clone(net, seed, opt):
    twin = make_model(seed, opt)
    for a, b in zip(twin.collect_params().values(), net.collect_params().values()):
        a.set_data(b.data().copy())
    return twin


class Worker:
    def __init__(self, k, args):
        self.k, self.args = k, args
        self.opt = OPTIMIZERS[k % len(OPTIMIZERS)]
        self.net = make_model(100 + k, self.opt)
        self.twin = clone(self.net, 100 + k, self.opt)
        self.trainer = gluon.Trainer(self.net.collect_params(), self.opt[0], dict(self.opt[1]))
        self.twin_trainer = gluon.Trainer(self.twin.collect_params(), self.opt[0], dict(self.opt[1]))
        rng = np.random.RandomState(k)
        self.x = rng.uniform(-1, 1, (256, 16)).astype(np.float32)
        self.y = rng.randint(0, 4, 256).astype(np.float32)
        self.loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        self.steps_done = 0
        self.checks = []
        self.error = None

    def step(self, net, trainer, xb, yb):
        with autograd.record():
            loss = self.loss_fn(net(xb), yb).mean()
        loss.backward()
        trainer.step(xb.shape[0])
        return loss

    def compare(self, step):
        a = [p.data().asnumpy() for p in self.twin.collect_params().values()]
        b = [p.data().asnumpy() for p in self.net.collect_params().values()]
        same = all(np.array_equal(u, v) for u, v in zip(a, b))
        diff = max(float(np.abs(u - v).max()) for u, v in zip(a, b))
        ok = all(np.allclose(v, u, rtol=self.args.rtol, atol=self.args.rtol) for u, v in zip(a, b))
        self.checks.append({"step": step, "bit_identical": same, "max_abs_diff": diff, "within_tolerance": ok})

    def run(self):
        try:
            bs = 32
            for step in range(1, self.args.steps + 1):
                s = ((step - 1) * bs) % len(self.x)
                xb, yb = nd.array(self.x[s:s + bs]), nd.array(self.y[s:s + bs])
                self.step(self.twin, self.twin_trainer, xb, yb).wait_to_read()
                # A site per thread: threads with different models and optimizers compile different
                # graphs, and one shared site would pass the recompile limit and run eagerly.
                with minpy_jit.jit(site="thread-%d" % self.k):
                    loss = self.step(self.net, self.trainer, xb, yb)
                loss.wait_to_read()
                if step % self.args.check == 0 or step == self.args.steps:
                    self.compare(step)
                self.steps_done = step
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            import traceback
            self.error = traceback.format_exc()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--check", type=int, default=1000)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--stall", type=float, default=300, help="seconds without any step that count as a deadlock")
    ap.add_argument("--timeout", type=float, default=6 * 3600)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    workers = [Worker(k, args) for k in range(args.threads)]
    threads = [threading.Thread(target=w.run, name="worker-%d" % w.k, daemon=True) for w in workers]
    t0 = time.time()
    for t in threads:
        t.start()
    last_total, last_change = -1, time.time()
    status = 0
    while any(t.is_alive() for t in threads):
        time.sleep(5)
        total = sum(w.steps_done for w in workers)
        now = time.time()
        if total != last_total:
            last_total, last_change = total, now
        if int(now - t0) // 60 != int(now - 5 - t0) // 60:
            print("[%5.0f s] steps per thread: %s" % (now - t0, [w.steps_done for w in workers]), flush=True)
        if now - last_change > args.stall or now - t0 > args.timeout:
            print("WATCHDOG: no step for %.0f s (or over %.0f s in all); stacks of every thread:"
                  % (now - last_change, args.timeout), flush=True)
            faulthandler.dump_traceback(all_threads=True)
            status = 2
            break
    elapsed = time.time() - t0
    result = {"threads": args.threads, "steps": args.steps, "seconds": round(elapsed, 1), "workers": []}
    for w in workers:
        result["workers"].append({"thread": w.k, "optimizer": w.opt[0], "options": w.opt[1], "steps_done": w.steps_done,
                                  "checks": w.checks, "error": w.error})
        final = w.checks[-1] if w.checks else None
        print("thread %d (%s %s): %d steps, %s%s" % (
            w.k, w.opt[0], w.opt[1], w.steps_done,
            "no check" if not final else "%d checks, %s (max |diff| %.3g)" % (
                len(w.checks), "all bit-identical" if all(c["bit_identical"] for c in w.checks) else
                ("all within rtol %g" % args.rtol if all(c["within_tolerance"] for c in w.checks) else "DIFFERENT"),
                max(c["max_abs_diff"] for c in w.checks)),
            "; ERROR:\n" + w.error if w.error else ""))
    bad = [w for w in workers if w.error or not w.checks or not all(c["within_tolerance"] for c in w.checks)
           or w.steps_done != args.steps]
    if status == 0 and bad:
        status = 1
    st = minpy_jit.stats()
    result["stats"] = {k: st[k] for k in ("executions", "eager_replays", "cache_hits", "cache_misses", "graphs_cached",
                                          "flushes", "fallbacks", "sites")}
    eager_sites = sorted(s for s, v in st["sites"].items() if v["eager"])
    if eager_sites:  # a site past the recompile limit ran eagerly: not a test of jit()
        print("sites that passed the recompile limit and ran eagerly: %s" % eager_sites)
        status = status or 1
    print("threads: %d threads x %d steps in %.0f s: %s; stats: executions %d, eager replays %d, cache hits %d, "
          "misses %d, flushes %s" % (args.threads, args.steps, elapsed,
                                     "PASS" if status == 0 else ("DEADLOCK/TIMEOUT" if status == 2 else "FAIL"),
                                     st["executions"], st["eager_replays"], st["cache_hits"], st["cache_misses"],
                                     st["flushes"]))
    result["status"] = status
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    sys.stdout.flush()
    os._exit(status)  # daemon threads may still be stuck in MXNet


if __name__ == "__main__":
    main()
