"""W5 many small updates: 200 parameters of shape (64, 64), SGD with momentum 0.9, lr 0.1.

Three forms, each eager vs jit():
  A. mx.nd.sgd_mom_update(w, g, mom, out=w) once per parameter (200 ops per update);
  B. gluon.Trainer(params, 'sgd', momentum=0.9).step(1) (MXNet aggregates the
     updates into multi_sgd_mom_update calls of 4 weights each; MXNet 1.9.1's SGD
     calls multi_sgd_mom_update even with aggregation off);
  C. gluon.Trainer(params, 'adam', learning_rate=0.001).step(1): one adam_update per
     parameter, its bias-corrected learning rate different at every step.
If jit() fails on a form, the table says FAILS and the error is printed.
A hybridized block is not applicable: an optimizer update is not a Gluon block
(Trainer.step runs imperatively in every mode), so there is nothing to hybridize.

    .venv/bin/python benchmarks/w5_many_updates.py [--json out.json] [--record-updates]

--record-updates: jit() records each Trainer update and runs it as a graph
(config(direct_updates=False)) instead of launching it directly (cpp/src/update_launch.h).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import gluon, nd  # noqa: E402

import minpy_jit  # noqa: E402
import reference  # noqa: E402
import timing  # noqa: E402

# W5 definition (copied from the benchmark definitions)
N_PARAMS = 200
SHAPE = (64, 64)
LR = 0.1
MOMENTUM = 0.9
ADAM_LR = 0.001


def initial_arrays():
    return reference.w5_inputs()


class OpForm:
    """Form A: one sgd_mom_update per parameter, in place."""

    def __init__(self, ws, gs):
        self.w = [nd.array(a) for a in ws]
        self.g = [nd.array(a) for a in gs]
        self.m = [nd.zeros(SHAPE) for _ in range(N_PARAMS)]
        self.calls = 0
        nd.waitall()

    def update(self):
        for w, g, m in zip(self.w, self.g, self.m):
            nd.sgd_mom_update(w, g, m, lr=LR, momentum=MOMENTUM, out=w)

    def weights(self):
        return [w.asnumpy() for w in self.w]


class TrainerForm:
    """Form B: Gluon Parameters + Trainer('sgd', momentum)."""

    OPTIMIZER = ("sgd", {"learning_rate": LR, "momentum": MOMENTUM})

    def __init__(self, ws, gs):
        self.params = gluon.ParameterDict("w5_")
        for i, (w, g) in enumerate(zip(ws, gs)):
            p = self.params.get("p%d" % i, shape=SHAPE)
            p.initialize(mx.init.Constant(0))
            p.set_data(nd.array(w))
            p.grad()[:] = nd.array(g)
        self.trainer = gluon.Trainer(self.params, *self.OPTIMIZER)
        self.data = [p.data() for p in self.params.values()]
        self.calls = 0
        nd.waitall()

    def mark_fresh(self):
        # what backward() would do; not part of the update being timed
        for d in self.data:
            d._fresh_grad = True

    def update(self):
        self.trainer.step(1)

    def weights(self):
        return [d.asnumpy() for d in self.data]


class AdamForm(TrainerForm):
    """Form C: the same Parameters + Trainer('adam')."""

    OPTIMIZER = ("adam", {"learning_rate": ADAM_LR})


def make_section(form, jit):
    """A self-timed call: one full update of all 200 parameters, ending with the weights ready."""

    def section():
        form.calls += 1
        if isinstance(form, TrainerForm):
            form.mark_fresh()
        t0 = timing.perf()
        if jit:
            with minpy_jit.jit():
                form.update()
        else:
            form.update()
        nd.waitall()
        return timing.perf() - t0

    return section


KINDS = ("op", "trainer", "adam")
LABELS = {"op": "nd.sgd_mom_update x%d" % N_PARAMS,
          "trainer": "Trainer('sgd', momentum).step",
          "adam": "Trainer('adam').step"}
FORMS = {"op": OpForm, "trainer": TrainerForm, "adam": AdamForm}


def main():
    if "--record-updates" in sys.argv:
        minpy_jit.config(direct_updates=False)
    ws, gs = initial_arrays()
    forms = {}
    for kind in KINDS:
        for mode in ("eager", "jit"):
            forms[(kind, mode)] = FORMS[kind](ws, gs)

    # correctness, once, before timing: 3 updates from the same state. A jit()
    # failure is reported in the table (and stops that form), never hidden.
    errors = {}
    checks = {}
    for kind in KINDS:
        for mode in ("eager", "jit"):
            try:
                for _ in range(3):
                    make_section(forms[(kind, mode)], mode == "jit")()
            except Exception as e:  # noqa: BLE001 - reported below
                if mode == "eager":
                    raise
                errors[kind] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:160])
            else:
                # form C is Adam, not the momentum update reference('W5') computes
                ref = reference.w5_adam_reference(*initial_arrays(), lr=ADAM_LR) if kind == "adam" else None
                checks[(kind, mode)] = reference.check("W5", forms[(kind, mode)].weights(), ref)
        if kind not in errors:
            ref = forms[(kind, "eager")].weights()
            for a, b in zip(forms[(kind, "jit")].weights(), ref):
                assert np.array_equal(a, b), "%s: jit weights differ from eager (bit for bit)" % kind
        if kind != "adam":
            for a, b in zip(forms[("op", "eager")].weights(), forms[(kind, "eager")].weights()):
                assert np.allclose(a, b, rtol=1e-5, atol=1e-6), "sgd_mom_update and %s disagree" % kind

    stats = {}
    res = {}
    for kind in KINDS:
        modes = ("eager",) if kind in errors else ("eager", "jit")
        if "jit" in modes:
            make_section(forms[(kind, "jit")], True)()
            forms[(kind, "jit")].calls = 0
        minpy_jit.reset_stats()
        r = timing.compare({mode: make_section(forms[(kind, mode)], mode == "jit") for mode in modes},
                           sections=True)
        if "jit" in modes:
            stats[kind] = minpy_jit.stats()
            stats[kind]["calls"] = forms[(kind, "jit")].calls
        for mode in r:
            res[(kind, mode)] = r[mode]
    ms = {k: r.median * 1e3 for k, r in res.items()}

    print("W5 many small updates: %d params %s, SGD momentum %g, lr %g; Adam lr %g; Trainer updates %s"
          % (N_PARAMS, SHAPE, MOMENTUM, LR, ADAM_LR,
             "launched directly" if minpy_jit.config()["direct_updates"] else "recorded (--record-updates)"))
    timing.print_env()
    print()
    rows = []
    for kind in KINDS:
        if kind in errors:
            rows.append([LABELS[kind], "%.3f" % ms[(kind, "eager")], "n/a", "FAILS", "-", "-", "-"])
            continue
        s = stats[kind]
        rows.append([LABELS[kind], "%.3f" % ms[(kind, "eager")], "n/a", "%.3f" % ms[(kind, "jit")],
                     timing.ratio(ms[(kind, "eager")], ms[(kind, "jit")]),
                     "%d/%d" % (s["cache_hits"], s["cache_misses"]),
                     "%.0f" % (sum(s["fallbacks"].values()) / max(1, s["calls"]))])
    timing.table(rows, ["form", "eager ms", "hybridized", "jit ms", "eager/jit", "hits/misses",
                        "fallback ops/update"])
    for (kind, mode), c in checks.items():
        print("%s %s vs float64 reference (%s): %s" % (LABELS[kind], mode, c["tol"], reference.check_text(c)))
    print("hybridized: n/a -- an optimizer update is not a Gluon block, so there is nothing to hybridize.")
    for kind in KINDS:
        if kind in errors:
            print("jit (%s) FAILED: %s" % (kind, errors[kind]))
            continue
        s = stats[kind]
        print("jit stats (%s): cache_hits=%d cache_misses=%d flushes=%s executions=%d eager_replays=%d "
              "fallbacks=%s trainer_updates=%s" % (kind, s["cache_hits"], s["cache_misses"], s["flushes"],
                                                   s["executions"], s["eager_replays"], s["fallbacks"],
                                                   s["trainer_updates"]))
    print("(a Trainer update launched directly, trainer_updates['direct'], is one engine operation, not a graph:"
          " it needs no cache lookup)")
    timing.write_summary(timing.summary_arg(), dict(
        id="W5", workload="W5 200x SGD-momentum (sgd_mom_update)", unit="ms/update", eager=ms[("op", "eager")],
        hybrid=None, jit=ms[("op", "jit")], cache_hits=stats["op"]["cache_hits"],
        checks={mode: checks.get(("op", mode)) for mode in ("eager", "jit")}, form=LABELS["op"],
        extra_systems=[dict(system="%s (%s)" % ("MXNet eager" if mode == "eager" else "minpy_jit jit()",
                                                LABELS[kind]),
                            value=ms.get((kind, mode)), check=checks.get((kind, mode)),
                            error=errors.get(kind) if mode == "jit" else None)
                       for kind in KINDS if kind != "op" for mode in ("eager", "jit")],
        cache_misses=stats["op"]["cache_misses"], errors=errors,
        other={kind: dict(eager=ms[(kind, "eager")], jit=ms.get((kind, "jit")))
               for kind in KINDS if kind != "op"}))


if __name__ == "__main__":
    main()
