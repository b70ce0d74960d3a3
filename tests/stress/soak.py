"""Soak: the digits MLP training loop (examples/train_digits.py) under jit() for many steps, with
an eager twin trained on the same batches in the same process.

    PYTHONPATH=. .venv/bin/python tests/stress/soak.py --steps 200000 --json tests/stress/out/soak.json

Every --sample steps it records the process RSS (/proc/self/statm) and the runtime's cache
size (stats()['graphs_cached']); every --check steps it compares the jit model's weights with
the eager twin's (bit for bit, and the largest difference). Passes when, after the warm-up
(the first --warmup fraction of the steps), RSS stays within --rss-tolerance (5%) of its
value at the end of the warm-up, the cache size stays bounded (no growth after warm-up), and
the weights agree at every checkpoint (within --rtol; the report says whether they were
bit-identical). Prints the RSS curve (one line per sample) and a summary; --json writes all of
it. Exit status 1 on failure. Not collected by pytest.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))

import mxnet as mx  # noqa: E402
from mxnet import autograd, gluon, nd  # noqa: E402

import minpy_jit  # noqa: E402
import train_digits  # noqa: E402


def rss_mb():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


class Model:
    def __init__(self, init, optimizer, lr):
        self.net = train_digits.make_net()
        self.net.initialize()
        for p, w in zip(self.net.collect_params().values(), init):
            p.set_data(w)
        self.trainer = train_digits.make_trainer(self.net, optimizer, lr)
        self.loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step(self, xb, yb):
        with autograd.record():
            loss = self.loss_fn(self.net(xb), yb).mean()
        loss.backward()
        self.trainer.step(1)
        return loss

    def weights(self):
        return [p.data().asnumpy() for p in self.net.collect_params().values()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200000)
    ap.add_argument("--sample", type=int, default=1000, help="RSS/cache sample interval (steps)")
    ap.add_argument("--check", type=int, default=10000, help="weight comparison interval (steps)")
    ap.add_argument("--warmup", type=float, default=0.1, help="fraction of steps before RSS must be flat")
    ap.add_argument("--rss-tolerance", type=float, default=0.05)
    ap.add_argument("--rtol", type=float, default=1e-5, help="weights: jit vs eager tolerance")
    ap.add_argument("--optimizer", default="adam", choices=("adam", "sgd", "sgd-momentum"))
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    lr = 0.001 if args.optimizer == "adam" else 0.05

    x_tr, y_tr, _, _ = train_digits.load_data()
    init = train_digits.initial_weights()
    eager, jitted = Model(init, args.optimizer, lr), Model(init, args.optimizer, lr)
    starts = list(range(0, len(x_tr), args.batch_size))
    rng = np.random.RandomState(0)
    order = rng.permutation(len(x_tr))
    samples, checks = [], []
    t0 = time.time()
    minpy_jit.reset_stats()
    for step in range(1, args.steps + 1):
        i = (step - 1) % len(starts)
        if i == 0:
            order = rng.permutation(len(x_tr))
        idx = order[starts[i]:starts[i] + args.batch_size]
        xb, yb = nd.array(x_tr[idx]), nd.array(y_tr[idx])
        le = eager.step(xb, yb)
        with minpy_jit.jit():
            lj = jitted.step(xb, yb)
        le.wait_to_read()
        lj.wait_to_read()
        if step % args.sample == 0:
            nd.waitall()
            st = minpy_jit.stats()
            samples.append({"step": step, "rss_mb": round(rss_mb(), 2), "graphs_cached": st["graphs_cached"],
                            "cache_misses": st["cache_misses"], "executions": st["executions"],
                            "eager_replays": st["eager_replays"], "seconds": round(time.time() - t0, 1)})
            s = samples[-1]
            print("step %7d  rss %8.2f MB  graphs cached %3d  misses %4d  eager replays %d  %6.0f s"
                  % (step, s["rss_mb"], s["graphs_cached"], s["cache_misses"], s["eager_replays"], s["seconds"]),
                  flush=True)
        if step % args.check == 0 or step == args.steps:
            we, wj = eager.weights(), jitted.weights()
            diff = max(float(np.abs(a - b).max()) for a, b in zip(we, wj))
            scale = max(float(np.abs(a).max()) for a in we)
            same = all(np.array_equal(a, b) for a, b in zip(we, wj))
            ok = all(np.allclose(b, a, rtol=args.rtol, atol=args.rtol * scale) for a, b in zip(we, wj))
            checks.append({"step": step, "bit_identical": same, "max_abs_diff": diff, "within_tolerance": ok,
                           "loss_eager": float(le.asscalar()), "loss_jit": float(lj.asscalar())})
            print("  check at step %d: weights %s (max |diff| %.3g), loss eager %.6f jit %.6f"
                  % (step, "bit-identical" if same else ("within rtol %g" % args.rtol if ok else "DIFFERENT"),
                     diff, checks[-1]["loss_eager"], checks[-1]["loss_jit"]), flush=True)

    warm = int(args.steps * args.warmup)
    after = [s for s in samples if s["step"] > warm]
    base = [s for s in samples if s["step"] <= warm][-1] if any(s["step"] <= warm for s in samples) else samples[0]
    rss_after = [s["rss_mb"] for s in after] or [base["rss_mb"]]
    drift = (max(rss_after) - base["rss_mb"]) / base["rss_mb"]
    spread = (max(rss_after) - min(rss_after)) / min(rss_after)
    cache_after = [s["graphs_cached"] for s in after] or [base["graphs_cached"]]
    result = {
        "steps": args.steps, "optimizer": args.optimizer, "seconds": round(time.time() - t0, 1),
        "rss_mb_at_warmup_end": base["rss_mb"], "rss_mb_min_after": min(rss_after), "rss_mb_max_after": max(rss_after),
        "rss_growth_after_warmup": round(drift, 4), "rss_spread_after_warmup": round(spread, 4),
        "graphs_cached_max": max(s["graphs_cached"] for s in samples),
        "graphs_cached_after_warmup": sorted(set(cache_after)),
        "misses_after_warmup": (after[-1]["cache_misses"] - base["cache_misses"]) if after else 0,
        "checks": checks, "samples": samples, "stats": minpy_jit.stats(),
    }
    failures = []
    if drift > args.rss_tolerance or spread > args.rss_tolerance:
        failures.append("RSS not flat after warm-up: %.2f MB at step %d, then %.2f..%.2f MB"
                        % (base["rss_mb"], base["step"], min(rss_after), max(rss_after)))
    if max(cache_after) > base["graphs_cached"] or result["misses_after_warmup"]:
        failures.append("the cache kept growing after warm-up (%s graphs, %d misses)"
                        % (result["graphs_cached_after_warmup"], result["misses_after_warmup"]))
    if not all(c["within_tolerance"] for c in checks):
        failures.append("weights differ from eager's")
    result["failures"] = failures
    print()
    print("soak: %d steps (%s) in %.0f s; RSS %.2f MB at the end of warm-up (step %d), %.2f..%.2f MB after "
          "(growth %+.2f%%, spread %.2f%%); graphs cached max %d, after warm-up %s, misses after warm-up %d; "
          "weights at %d checkpoints: %s, max |diff| %.3g"
          % (args.steps, args.optimizer, result["seconds"], base["rss_mb"], base["step"], min(rss_after),
             max(rss_after), 100 * drift, 100 * spread, result["graphs_cached_max"],
             result["graphs_cached_after_warmup"], result["misses_after_warmup"], len(checks),
             "all bit-identical" if all(c["bit_identical"] for c in checks) else
             ("all within rtol %g" % args.rtol if all(c["within_tolerance"] for c in checks) else "DIFFERENT"),
             max(c["max_abs_diff"] for c in checks)))
    print("PASS" if not failures else "FAIL: " + "; ".join(failures))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
