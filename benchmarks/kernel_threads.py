"""Where our kernels' second thread pays: one call of a kernel (its op called eagerly, waited
for) on one thread and on two, over sizes around the thresholds in cpp/kernels.

Kernels: _minpy_fused_elemwise with a light program (ld, mul, add: 4 work units an element)
and a heavy one (ld, tanh: 9 units), _minpy_multi_sgd_mom_update over weights of 4096
elements (W5's shape), and elemwise_sum (grad_sum.cc: the gradient sum a backward() inside
our graph uses where a value feeds two ops) of two arrays. Each configuration runs in its own process (the thread limit is read
once), with MINPY_KERNELS_THRESHOLD_SCALE=0 so that every call uses the threads it is given,
in alternating rounds; calls are timed in batches of 8 writing one array (the engine runs one
while Python queues the next), so a call's time is mostly its kernel's. The table gives
medians of per-call wall time, 1-thread / 2-thread
(> 1: the second thread pays), and where the compiled-in thresholds put each size.

    .venv/bin/python benchmarks/kernel_threads.py [--rounds 2] [--only fused|update|sum]
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FUSED_SIZES = (1 << 13, 1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 20)
UPDATE_SIZES = (1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 200 * 4096, 1 << 21)
SUM_SIZES = (1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 20, 1 << 22)
PROGRAMS = {"light": ("ld 0;ld 1;mul 0 1;add 2 0", 2, 4), "heavy": ("ld 0;tanh 0", 1, 9)}
# The compiled-in thresholds (cpp/kernels/fused_elemwise.cc kParallelWork, multi_update.cc
# kMinElemsPerThread, grad_sum.cc kMinElemsPerThread): a call threads from this much work on.
FUSED_THRESHOLD_WORK = 1 << 20
UPDATE_THRESHOLD_ELEMS = 2 * (1 << 16)
SUM_THRESHOLD_WORK = 2 * (1 << 19)  # elements times inputs


def _library_op(name):
    """An eager wrapper of one of the kernel library's ops that minpy_jit does not expose."""
    import ctypes
    from mxnet.base import _LIB, c_str, check_call
    from mxnet.ndarray.register import _make_ndarray_function
    handle = ctypes.c_void_p()
    check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(handle)))
    return _make_ndarray_function(handle, name, name)


def child(out_path, only=None):
    import numpy as np
    import mxnet as mx
    import minpy_jit  # noqa: F401  (loads the kernel library)
    import timing

    rng = np.random.default_rng(0)
    res = {}

    def per_call(call, batch=8):
        """Median time of one call, from batches of calls that write one array (the engine
        runs them one after the other while Python queues the next: mostly kernel time)."""
        def fn():
            for _ in range(batch - 1):
                call()
            call().wait_to_read()
        fn()
        return timing.bench(fn, warmup=2).median / batch

    for name, (prog, n_in, _) in PROGRAMS.items():
        for n in FUSED_SIZES if only in (None, "fused") else ():
            xs = [mx.nd.array(rng.uniform(-3, 3, n).astype(np.float32)) for _ in range(n_in)]
            out = mx.nd.empty((n,))
            kw = dict(num_inputs=n_in, num_outputs=1, out_shape="(%d,)" % n, access=";".join(["0,%d,1" % n] * n_in),
                      program=prog, outputs=str(prog.count(";")))

            def run(xs=xs, out=out, kw=kw):
                return mx.nd._internal._minpy_fused_elemwise(*xs, out=out, **kw)
            res["fused %s %d" % (name, n)] = per_call(run)
    for n in UPDATE_SIZES if only in (None, "update") else ():
        nw, m = max(1, n // 4096), min(n, 4096)
        arrays = []
        for _ in range(nw):
            arrays += [mx.nd.array(rng.uniform(-1, 1, m).astype(np.float32)) for _ in range(3)]
        kw = dict(num_weights=nw, lrs=",".join(["0.01"] * nw), wds=",".join(["0.0"] * nw), momentum=0.9,
                  weights_in_place=1)

        def run(arrays=arrays, kw=kw):
            return mx.nd._internal._minpy_multi_sgd_mom_update(*arrays, **kw)
        res["update %d" % n] = per_call(run)
    elemwise_sum = _library_op("elemwise_sum")
    for n in SUM_SIZES if only in (None, "sum") else ():
        a, b = (mx.nd.array(rng.uniform(-1, 1, n).astype(np.float32)) for _ in range(2))
        out = mx.nd.empty((n,))

        def run(a=a, b=b, out=out):
            return elemwise_sum(a, b, num_args=2, out=out)
        res["sum %d" % n] = per_call(run)
    res["threads"] = minpy_jit.kernel_threads()
    with open(out_path, "w") as f:
        json.dump(res, f)


def main():
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    runs = {1: [], 2: []}
    for _ in range(rounds):
        for t in (1, 2):
            env = dict(os.environ, MXNET_OMP_MAX_THREADS=str(t), MINPY_KERNELS_THRESHOLD_SCALE="0")
            path = "/tmp/kernel_threads_%d_%d.json" % (os.getpid(), t)
            subprocess.run([sys.executable, __file__, "--child", path] + sys.argv[1:], env=env, check=True)
            with open(path) as f:
                runs[t].append(json.load(f))
            os.unlink(path)
    for t, rs in runs.items():
        for r in rs:
            assert r["threads"]["max_threads"] == t, r["threads"]
    import statistics
    import timing
    timing.print_env()
    print("load average now: %.2f %.2f %.2f (%s)" % (os.getloadavg() + (time.strftime("%H:%M:%S"),)))
    rows = []
    for key in runs[1][0]:
        if key == "threads":
            continue
        one = statistics.median(r[key] for r in runs[1])
        two = statistics.median(r[key] for r in runs[2])
        kind, *rest = key.split()
        n = int(rest[-1])
        if kind == "fused":
            work = n * PROGRAMS[rest[0]][2]
            threads = "2" if work >= FUSED_THRESHOLD_WORK else "1"
            desc = "%d units" % work
        elif kind == "sum":
            threads = "2" if 2 * n >= SUM_THRESHOLD_WORK else "1"
            desc = "2 x %d elements" % n
        else:
            threads = "2" if n >= UPDATE_THRESHOLD_ELEMS else "1"
            desc = "%d weights" % max(1, n // 4096)
        rows.append([key, desc, "%.1f" % (one * 1e6), "%.1f" % (two * 1e6), "%.2f" % (one / two), threads])
    timing.table(rows, ["call", "work", "1 thread us", "2 threads us", "1t/2t", "threads used"])


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1],
              sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None)
    else:
        main()
