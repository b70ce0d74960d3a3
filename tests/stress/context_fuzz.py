"""Random programs on two contexts, eagerly and under jit(), compared bit for bit.

    PYTHONPATH=. .venv/bin/python tests/stress/context_fuzz.py --programs 3000 --start 1000

Each program moves between cpu(0) and cpu(1) at random, so the thread's open traces of the two
contexts (record.cc, one trace per context) take turns: elementwise ops and `dot` on either
context, copies across (`as_in_context`), in-place writes (`x[:] = ...`, `out=` into the other
context's array), random draws on both (MXNet's CPU contexts share one generator, so their order
is the program's), reads midway (`asscalar`), and, under `autograd.record()`, a loss per context
whose `backward()` comes in either order. Every array, gradient and read value must have eager's
bits, and an exception must be eager's. Not collected by pytest (no test_ prefix);
tests/test_data_parallel.py runs a few seeds in the suite.
"""
import argparse
import contextlib
import os
import sys

import mxnet as mx
import numpy as np
from mxnet import autograd, nd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import minpy_jit  # noqa: E402

CTX = [mx.cpu(0), mx.cpu(1)]
STEPS = 14


def program(seed, J):
    """Runs program `seed` inside J(); returns everything it observed, as NumPy values."""
    rs = np.random.RandomState(seed)
    arrays = {c: [nd.array(rs.uniform(-1, 1, (3, 4)).astype(np.float32), ctx=CTX[c]) for _ in range(3)]
              for c in (0, 1)}
    weights = {c: nd.array(rs.uniform(-1, 1, (4, 4)).astype(np.float32), ctx=CTX[c]) for c in (0, 1)}
    for w in weights.values():
        w.attach_grad()
    kinds, contexts = rs.randint(0, 11, size=STEPS), rs.randint(0, 2, size=STEPS)
    recording = rs.rand() < 0.6
    reads = []
    mx.random.seed(seed % 1000)
    with J():
        with autograd.record() if recording else contextlib.nullcontext():
            for kind, c in zip(kinds, contexts):
                own, other = arrays[c], arrays[1 - c]
                x, y = own[rs.randint(len(own))], own[rs.randint(len(own))]
                if kind == 0:
                    own.append(x * 1.5 + y)
                elif kind == 1:
                    own.append(nd.dot(x, weights[c]))
                elif kind == 2:
                    own.append(nd.tanh(x) - y.relu())
                elif kind == 3:
                    own.append(nd.random.uniform(shape=(3, 4), ctx=CTX[c]) + x)
                elif kind == 4:
                    other.append(x.as_in_context(CTX[1 - c]) * 2)
                elif kind == 5 and not recording:
                    x[:] = y * 0.5
                    own.append(x + 0)
                elif kind == 6:
                    own.append(nd.sigmoid(x) * y)
                elif kind == 7 and not recording:
                    reads.append(np.float32(x.sum().asscalar()))
                elif kind == 8:
                    own.append(nd.random.normal(shape=(3, 4), ctx=CTX[c]) * x)
                elif kind == 9 and not recording:
                    nd.elemwise_add(x, y, out=other[0])
                else:
                    own.append(x * y)
            losses = {c: (nd.dot(arrays[c][-1], weights[c]) * arrays[c][-1].mean()).sum() for c in (0, 1)}
        if recording:
            for c in ([0, 1] if rs.rand() < 0.5 else [1, 0]):
                losses[c].backward()
            reads += [weights[c].grad for c in (0, 1)]
    observed = [a for c in (0, 1) for a in arrays[c]] + [weights[0], weights[1]] + reads
    return [a.asnumpy() if hasattr(a, "asnumpy") else a for a in observed]


def outcome(seed, J):
    try:
        return program(seed, J)
    except Exception as e:  # the same exception eagerly and under jit()
        return type(e).__name__ + ": " + str(e).split("\n")[0]


def difference(seed):
    """None if program `seed` observed the same bits eagerly and under jit(), else what differs."""
    minpy_jit.clear_cache()  # every program compiles its own graphs, past any recompile limit
    want, got = outcome(seed, contextlib.nullcontext), outcome(seed, minpy_jit.jit)
    if isinstance(want, str) or isinstance(got, str):
        return None if want == got else "eager: %s, jit(): %s" % (
            want if isinstance(want, str) else "ok", got if isinstance(got, str) else "ok")
    if len(want) != len(got):
        return "%d values eagerly, %d under jit()" % (len(want), len(got))
    for i, (a, b) in enumerate(zip(want, got)):
        a, b = np.atleast_1d(a), np.atleast_1d(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return "value %d: eager %s %s, jit() %s %s" % (i, a.shape, a.dtype, b.shape, b.dtype)
        same = np.array_equal(a.view(np.uint8), b.view(np.uint8))  # gradients too (flush.cc sums_cross_parts)
        if not same:
            return "value %d: eager %s, jit() %s" % (i, a.ravel()[:4], b.ravel()[:4])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0, help="first seed")
    args = ap.parse_args()
    minpy_jit.config(recompile_limit=10**6)
    minpy_jit.reset_stats()
    mismatches = 0
    for seed in range(args.start, args.start + args.programs):
        why = difference(seed)
        if why:
            mismatches += 1
            print("MISMATCH seed %d: %s" % (seed, why), flush=True)
    st = minpy_jit.stats()
    print("%d programs (seeds %d-%d), %d mismatches; %d context switches, %d backward() in graphs, "
          "%d executions" % (args.programs, args.start, args.start + args.programs - 1, mismatches,
                             st["context_switches"], st["backward_in_graph"], st["executions"]))


if __name__ == "__main__":
    main()
