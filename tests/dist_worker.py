"""One process of the distributed tests' jobs (tests/test_distributed.py starts it through
minpy_jit.launcher: the scheduler and server processes never get past `import mxnet`).

A worker trains a small MLP with a Trainer on the job's kvstore for a few steps, on its
own half of each batch, inside jit() (or eagerly with --eager), and saves what the test
checks to <out>/worker<rank>.npz: the weights after the last step (pulled from the
servers) and, per parameter, the sum of the gradients it pushed.
"""
import argparse
import contextlib
import itertools
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # noqa: E402

import mxnet as mx  # noqa: E402  (scheduler and server processes stay in here)
from mxnet import autograd, gluon, nd  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

BATCH, IN, HIDDEN, OUT = 8, 20, 16, 4
SEED = 5


def batches(steps, seed=3):
    """The same batches the single-process reference trains on (test_distributed.py)."""
    rs = np.random.RandomState(seed)
    return [(rs.randn(BATCH, IN).astype(np.float32), rs.randint(0, OUT, size=BATCH).astype(np.float32))
            for _ in range(steps)]


def make_net(ctx):
    mx.random.seed(SEED)
    net = nn.HybridSequential()
    net.add(nn.Dense(HIDDEN, activation="relu", in_units=IN), nn.Dense(OUT, in_units=HIDDEN))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    return net


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--kvstore", default="dist_sync")
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--contexts", type=int, default=1, help="CPU contexts in this worker (dist_sync_device)")
    ap.add_argument("--eager", action="store_true")
    ap.add_argument("--update-on-kvstore", choices=["default", "true", "false"], default="default")
    ap.add_argument("--init-barrier", action="store_true")
    ap.add_argument("--hang-after", type=int, default=-1, help="print 'ready' after this step, then keep training")
    args = ap.parse_args()

    import minpy_jit
    minpy_jit.reset_stats()
    misses_after_two = 0
    kv = mx.kv.create(args.kvstore)
    rank, workers = kv.rank, kv.num_workers
    ctx = [mx.cpu(i) for i in range(args.contexts)]
    net = make_net(ctx)
    kw = {"learning_rate": 0.1}
    if args.momentum:
        kw["momentum"] = args.momentum
    uok = {"default": None, "true": True, "false": False}[args.update_on_kvstore]
    trainer = gluon.Trainer(net.collect_params(), args.optimizer, kw, kvstore=kv, update_on_kvstore=uok)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    params = list(net.collect_params().values())
    if args.init_barrier:
        # MXNet initialises a dist kvstore lazily (first step) with an asynchronous push of the
        # weights by rank 0 followed by a barrier that does not wait for that push: with two
        # servers another worker's first gradients can reach a server first and be taken for
        # the initial value (seen eagerly in 4 of 5 runs). Initialising up front and waiting
        # for the push before the barrier avoids it.
        # Inside jit() unless --eager, as a first trainer.step() inside jit() would do it: the
        # servers then run our C updater (minpy_jit/server_updates.py).
        with minpy_jit.jit() if not args.eager else contextlib.nullcontext():
            trainer._check_and_rescale_grad(trainer._scale / BATCH)  # what step(BATCH) sets before it
            trainer._init_kvstore()
            trainer._init_params()
        nd.waitall()
        kv._barrier()
    pushed = [np.zeros(p.shape, np.float32) for p in params]
    per = BATCH // workers
    data = batches(args.steps)
    if args.hang_after >= 0:  # trains until it is stopped
        data = itertools.cycle(data)
    scope = minpy_jit.jit() if not args.eager else None
    if scope:
        scope.__enter__()
    try:
        for i, (x, y) in enumerate(data):
            xs = gluon.utils.split_and_load(nd.array(x[rank * per:(rank + 1) * per]), ctx)
            ys = gluon.utils.split_and_load(nd.array(y[rank * per:(rank + 1) * per]), ctx)
            with autograd.record():
                losses = [lossfn(net(a), b) for a, b in zip(xs, ys)]
            for loss in losses:
                loss.backward()
            if args.kvstore == "dist_async":  # the gradients this worker pushes (an invariant below)
                for acc, p in zip(pushed, params):
                    acc += sum(g.asnumpy() for g in p.list_grad())
            trainer.step(BATCH)
            if i == 1:  # two steps done: from here on every graph should be a cache hit
                misses_after_two = minpy_jit.stats()["cache_misses"]
            if i == args.hang_after:
                print("ready", flush=True)
    finally:
        if scope:
            scope.__exit__(None, None, None)
    nd.waitall()  # this worker's pushes are done: the servers answered them
    kv._barrier()  # ... and so are the other workers'
    for idx, p in enumerate(params):  # the servers' weights (async: the last pull may predate others' pushes)
        if trainer._update_on_kvstore:
            kv.pull(trainer._param2idx[p.name], out=p.list_data())
    weights = [p.data(ctx[0]).asnumpy() for p in params]
    np.savez(os.path.join(args.out, "worker%d.npz" % rank), *weights, *pushed)
    stats = minpy_jit.stats()
    print(json.dumps({"rank": rank, "kvstore": stats.get("kvstore"), "misses": stats["cache_misses"],
                      "misses_after_step_2": stats["cache_misses"] - misses_after_two,
                      "executions": stats["executions"], "eager_replays": stats["eager_replays"]}), flush=True)


if __name__ == "__main__":
    main()
