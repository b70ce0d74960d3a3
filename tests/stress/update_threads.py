"""Threads mixing per-weight optimizer updates with other ops at one jit() site, against eager.

    PYTHONPATH=. .venv/bin/python tests/stress/update_threads.py --threads 6 --steps 300
    PYTHONPATH=. .venv/bin/python tests/stress/update_threads.py --recompile-limit 1000000000   # keeps recording

Each thread owns a dozen (weight, gradient, momentum) triples of random shapes and an eager twin
of them. Per step it runs a random program twice, eagerly on the twin and inside `with
minpy_jit.jit():` (the same line for every thread, so one site): per-weight updates (gathered into
one launch, cpp/src/update_batch.h), some of them reading another weight as their gradient,
in-place writes of gradients and momenta, reads, waits and explicit flushes. Every --check steps
all arrays are compared bit for bit. The programs differ from step to step, so the shared site
passes its recompile limit early and the threads then run eagerly there while others may still
have ops pending (the case this found first: commit 6561cb9). Exit status 1 on a difference or
an exception in a thread. Not collected by pytest.
"""
import argparse
import random
import sys
import threading

import numpy as np
from mxnet import nd

import minpy_jit


def arrays(seed, n=12):
    rs = np.random.RandomState(seed)
    shapes = [(int(rs.randint(1, 70)), int(rs.randint(1, 70))) for _ in range(n)]
    return [[nd.array(rs.uniform(-scale, scale, s)) for s in shapes] for scale in (1.0, 1.0, 0.1)]


def program(rng, ws, gs, ms, jit):
    for _ in range(rng.randint(5, 40)):
        r = rng.random()
        i = rng.randrange(len(ws))
        if r < 0.6:
            kind = rng.randrange(4)
            lr = rng.choice([0.1, 0.05, 0.01])
            if kind == 0:
                nd.sgd_mom_update(ws[i], gs[i], ms[i], lr=lr, momentum=0.9, out=ws[i])
            elif kind == 1:
                nd.sgd_update(ws[i], gs[i], lr=lr, wd=1e-3, out=ws[i])
            elif kind == 2:
                nd.nag_mom_update(ws[i], gs[i], ms[i], lr=lr, momentum=0.8, out=ws[i])
            else:  # the next weight as the gradient where the shapes allow
                k = (i + 1) % len(ws)
                g = ws[k] if ws[k].shape == ws[i].shape else gs[i]
                nd.sgd_mom_update(ws[i], g, ms[i], lr=lr, momentum=0.9, out=ws[i])
        elif r < 0.75:
            gs[i][:] = gs[i] * 0.9 + 0.01
        elif r < 0.85:
            ms[i] += 0.001
        elif r < 0.92:
            ws[i].wait_to_read()
        elif r < 0.96 and jit:
            minpy_jit.flush()
        else:
            ws[i].asnumpy()


def worker(tid, args, errors):
    try:
        eager, jitted = arrays(tid), arrays(tid)
        for step in range(args.steps):
            program(random.Random(tid * 1000003 + step), *eager, jit=False)
            with minpy_jit.jit():
                program(random.Random(tid * 1000003 + step), *jitted, jit=True)
            if step % args.check == 0 or step == args.steps - 1:
                flat_e, flat_j = sum(eager, []), sum(jitted, [])
                bad = [k for k, (a, b) in enumerate(zip(flat_e, flat_j))
                       if not np.array_equal(a.asnumpy().view(np.uint32), b.asnumpy().view(np.uint32))]
                if bad:
                    errors.append("thread %d step %d: arrays %s differ" % (tid, step, bad))
                    return
    except Exception as e:  # noqa: BLE001 - reported below
        errors.append("thread %d: %r" % (tid, e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--check", type=int, default=50)
    ap.add_argument("--recompile-limit", type=int, default=None,
                    help="the site's limit (default 8: the site soon runs eagerly; 1000000000 keeps it recording)")
    args = ap.parse_args()
    if args.recompile_limit is not None:
        minpy_jit.config(recompile_limit=args.recompile_limit)
    errors = []
    threads = [threading.Thread(target=worker, args=(t, args, errors)) for t in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = minpy_jit.stats()
    print("%d threads x %d steps: %s; update launches %d, fallbacks %d" % (
        args.threads, args.steps, "; ".join(errors) or "every array equal to eager's, bit for bit",
        s["update_flushes_direct"], sum(s["fallbacks"].values())))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
