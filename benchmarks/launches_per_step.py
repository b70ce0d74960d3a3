"""How many launches one W3 training step takes under jit(): compiled graphs run, Trainer updates
launched directly (one engine operation each, when nothing is recorded before Trainer.step:
cpp/src/update_launch.h), and calls of MXNet's autograd backward (Imperative::Backward, which
builds, plans and runs a backward graph of its own), in three settings: the whole step as one
graph (backward() inside our graph and its trace left open for the update: the default),
backward() inside our graph with the update launched after it (config(whole_step=False)), and
backward() left to MXNet's autograd (config(backward_in_graph=False)).

    .venv/bin/python benchmarks/launches_per_step.py [--steps 20] [--time]

Counts, not times: the numbers do not depend on the machine's load. --time also times the
W3 step (Gluon + Trainer sgd, and the NDArray form) under jit() in the three settings and
eagerly, interleaved in one run (timing.compare), and prints the ratios.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import minpy_jit  # noqa: E402
import timing  # noqa: E402
from w3_mlp_step import NDSetup, Setup, initial_weights  # noqa: E402

OPTIMIZERS = (("sgd", {"learning_rate": 0.1}), ("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
              ("adam", {"learning_rate": 0.01}))


WHOLE, SPLIT, AUTOGRAD = "whole step, one graph", "backward in graph + update", "backward by MXNet autograd"
SETTINGS = {AUTOGRAD: dict(backward_in_graph=False, whole_step=False),
            SPLIT: dict(backward_in_graph=True, whole_step=False),
            WHOLE: dict(backward_in_graph=True, whole_step=True)}


def per_step(setup, steps):
    setup.step()  # compiles (and creates optimizer states)
    setup.step()
    minpy_jit.reset_stats()
    for _ in range(steps):
        setup.step()
    st = minpy_jit.stats()
    return (st["executions"] / steps, st["kernels_launched_directly"] / steps, st["trainer_updates"]["direct"] / steps,
            st["backward_by_mxnet"] / steps, st["flushes"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--time", action="store_true")
    args = ap.parse_args()
    steps = args.steps
    init = initial_weights()
    print("W3 step under jit(), per step over %d steps: compiled graphs run (of them: run without CachedOp, as one "
          "engine operation calling our kernels, cpp/src/kernel_launch.h), Trainer updates launched directly "
          "(one engine operation, cpp/src/update_launch.h), MXNet autograd backward calls" % steps)
    for setting in SETTINGS:
        minpy_jit.config(**SETTINGS[setting])
        label = setting
        for opt, kw in OPTIMIZERS:
            s = Setup("jit", init)
            s.trainer = s.trainer.__class__(s.net.collect_params(), opt, kw)
            g, k, d, b, fl = per_step(s, steps)
            name = opt + (" momentum" if kw.get("momentum") else "")
            print("  %-30s Gluon + Trainer(%-12s): %.1f graphs (%.1f without CachedOp), %.1f direct updates, "
                  "%.1f autograd backward; flushes %s" % (label, name, g, k, d, b, fl))
        g, k, d, b, fl = per_step(NDSetup("nd-jit", init), steps)
        print("  %-30s NDArray form (sgd_update) : %.1f graphs (%.1f without CachedOp), %.1f direct updates, "
              "%.1f autograd backward; flushes %s" % (label, g, k, d, b, fl))
    minpy_jit.config(**SETTINGS[WHOLE])
    if args.time:
        time_both(init)


def time_both(init):
    fns = {}
    for form, make in (("Gluon + Trainer", lambda m: Setup(m, init)), ("NDArray form", lambda m: NDSetup(m, init))):
        jit_mode = "jit" if form == "Gluon + Trainer" else "nd-jit"
        fns[form + ", eager"] = make("eager" if jit_mode == "jit" else "nd-eager").step
        for setting, cfg in SETTINGS.items():
            setup = make(jit_mode)

            def step(setup=setup, cfg=cfg):
                minpy_jit.config(**cfg)
                return setup.step()
            fns["%s, jit() %s" % (form, setting)] = step
    res = timing.compare(fns)
    minpy_jit.config(**SETTINGS[WHOLE])
    timing.print_env()
    ms = {k: r.median * 1e3 for k, r in res.items()}
    timing.table([[k, "%.3f" % ms[k], "%.0f%%" % (100 * res[k].spread)] for k in fns], ["W3 step", "ms", "spread"])
    for form in ("Gluon + Trainer", "NDArray form"):
        e = ms[form + ", eager"]
        w, sp, a = (ms["%s, jit() %s" % (form, s)] for s in (WHOLE, SPLIT, AUTOGRAD))
        print("%s: eager/jit %s with the whole step as one graph, %s with backward in our graph + update, "
              "%s with MXNet's autograd backward; (backward in graph + update)/(whole step) %s"
              % (form, timing.ratio(e, w), timing.ratio(e, sp), timing.ratio(e, a), timing.ratio(sp, w)))


if __name__ == "__main__":
    main()
