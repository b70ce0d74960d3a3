# Developer check, data side (not part of the library): runs MXNet's nd.log_softmax(x, axis=-1)
# forward and its backward (autograd, random head gradients) on many random inputs per shape and
# writes inputs and MXNet's outputs for onednn_softmax_check.cc to compare against
# onednn_softmax.h. Run it once per oneDNN ISA path (DNNL_MAX_CPU_ISA is read when MXNet loads):
#   .venv/bin/python cpp/kernels/dev/onednn_softmax_check.py /tmp/lsm_default
#   DNNL_MAX_CPU_ISA=AVX2 .venv/bin/python cpp/kernels/dev/onednn_softmax_check.py /tmp/lsm_avx2
# It turns DNNL_VERBOSE on and records which oneDNN implementation ran for each shape and
# direction (jit:avx512_common, jit:avx2, ref:any) in OUT/index.txt, one line per shape:
#   name rows cols trials fwd_impls bwd_impls
# and OUT/<name>.bin: x, dy, y (MXNet's forward), dx (MXNet's backward), y_inference (forward
# outside autograd), each float32 of trials*rows*cols elements. --trials-scale S multiplies the
# number of trials. --sweep writes instead one dataset, 65536x16, of rows [0, v1..v15] where the
# v run through 8.8M negative floats (-0 to -inf, see sweep_values) with head gradient
# [1, 0, ..., 0]: exp on all those arguments, log on sums in [1, 16] (about 190 MB):
#   .venv/bin/python cpp/kernels/dev/onednn_softmax_check.py /tmp/lsm_sweep --sweep
import ctypes
import os
import sys
import tempfile

os.environ["DNNL_VERBOSE"] = "1"
import numpy as np  # noqa: E402
import mxnet as mx  # noqa: E402
from mxnet import autograd, nd  # noqa: E402

F32 = np.float32
FMAX = np.finfo(F32).max
# NaNs of both signs, quiet and signalling, with payloads (NumPy's nan is 0x7fc00000)
NANS = np.array([0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFFC12345, 0x7F800001, 0xFF800ABC, 0x7FFFFFFF],
                dtype=np.uint32).view(F32)

# (shape, trials): the loss shapes first, then short rows of every tail length around 8 and
# 16, then long rows. A 1-D and a 3-D shape check that MXNet flattens leading axes into rows.
SHAPES = [((64, 10), 300), ((32, 10), 300), ((128, 100), 100), ((16, 1000), 60),
          ((8, 1), 300), ((8, 2), 300), ((8, 3), 300), ((8, 5), 300), ((8, 7), 300), ((8, 8), 300),
          ((8, 9), 300), ((8, 13), 300), ((8, 15), 300), ((8, 16), 300), ((8, 17), 300), ((8, 24), 300),
          ((8, 31), 300), ((8, 32), 300), ((8, 33), 300), ((8, 47), 200), ((8, 63), 200), ((8, 64), 200),
          ((8, 65), 200), ((8, 100), 200), ((4, 127), 200), ((4, 129), 200), ((4, 255), 100),
          ((4, 257), 100), ((4, 1001), 60), ((8, 4096), 20), ((2, 4099), 20), ((2, 100000), 3),
          ((10,), 300), ((4, 5, 10), 200)]


def wide(rng, n):
    """Signed magnitudes spread over the whole float range, subnormals included."""
    e = rng.uniform(-149, 127.99, n)
    s = rng.choice([-1.0, 1.0], n)
    return (s * np.exp2(e)).astype(F32)


def logits_row(rng, c):
    kind = rng.integers(0, 12)
    if kind == 0:
        return rng.uniform(-30, 30, c).astype(F32)
    if kind == 1:
        return rng.uniform(-3, 3, c).astype(F32)
    if kind == 2:
        return wide(rng, c)
    if kind == 3:  # +-inf among ordinary values
        r = rng.uniform(-30, 30, c).astype(F32)
        k = rng.integers(1, min(c, 3) + 1)
        r[rng.choice(c, k, replace=False)] = rng.choice([np.inf, -np.inf], k)
        return r
    if kind == 4:  # NaN (and sometimes inf) among ordinary values
        r = rng.uniform(-30, 30, c).astype(F32)
        k = rng.integers(1, min(c, 2) + 1)
        r[rng.choice(c, k, replace=False)] = rng.choice(NANS, k)
        if rng.integers(0, 3) == 0:
            r[rng.integers(0, c)] = rng.choice([np.inf, -np.inf])
        return r
    if kind == 5:  # all equal
        v = rng.choice([0.0, -0.0, 1.0, -7.5, 88.0, -1e30, 3e38, 1e-40, float(wide(rng, 1)[0])])
        return np.full(c, v, F32)
    if kind == 6:  # near float max, both signs
        return (rng.choice([-1.0, 1.0], c) * rng.uniform(0.5, 1.0, c) * FMAX).astype(F32)
    if kind == 7:  # values a few ulps apart (around 0 these are subnormal steps)
        base = F32(rng.choice([0.0, 1e-42, 1.0, 100.0, -50.0, 1e-38]))
        bits = np.full(c, base, F32).view(np.int32) + rng.integers(0, 5, c).astype(np.int32)
        return bits.view(F32)
    if kind == 8:  # wide enough that exp underflows (x - max below ln(FLT_MIN))
        return rng.uniform(-200, 200, c).astype(F32)
    if kind == 9:  # -inf / -FLT_MAX rows
        sub = rng.integers(0, 4)
        if sub == 0:
            return np.full(c, -np.inf, F32)
        if sub == 1:
            return np.full(c, -FMAX, F32)
        r = np.full(c, -np.inf if sub == 2 else -FMAX, F32)
        r[rng.integers(0, c)] = F32(rng.uniform(-5, 5))
        return r
    if kind == 10:  # one confident class
        r = np.zeros(c, F32)
        r[rng.integers(0, c)] = F32(rng.uniform(5, 60))
        return r
    return (rng.standard_normal(c) * rng.choice([0.1, 1.0, 10.0])).astype(F32)


def grad_row(rng, c):
    kind = rng.integers(0, 7)
    if kind == 0:
        return rng.uniform(-1, 1, c).astype(F32)
    if kind == 1:  # what a cross-entropy head passes: -1/batch at the label, else 0
        r = np.zeros(c, F32)
        r[rng.integers(0, c)] = F32(-1.0 / 64)
        return r
    if kind == 2:
        return wide(rng, c)
    if kind == 3:
        r = rng.uniform(-1, 1, c).astype(F32)
        r[rng.integers(0, c)] = rng.choice([np.inf, -np.inf, rng.choice(NANS)])
        return r
    if kind == 4:
        return rng.choice([0.0, -0.0], c).astype(F32)
    if kind == 5:
        return np.full(c, F32(rng.uniform(-2, 2)), F32)
    return (rng.standard_normal(c) * 1e4).astype(F32)


def sweep_values():
    """Negative floats, -0 to -inf: every 131st bit pattern down to -104 (below that exp is 0
    and the backward's product tiny), every 4099th beyond. exp's argument is never positive
    in log_softmax (d = x - max <= 0; y <= ~1.4e-6), except NaN."""
    near = np.arange(0x80000000, 0xC2D00000, 131, dtype=np.uint64)
    far = np.arange(0xC2D00000, 0xFF800000, 4099, dtype=np.uint64)
    v = np.concatenate([near, far, [0xFF800000]]).astype(np.uint32).view(F32)
    pad = (-len(v)) % 15
    return np.concatenate([v, np.full(pad, F32(-1.0))])


def datasets(rng, scale, sweep):
    """(shape, trials, make(trial) -> (x, dy)) for each dataset."""
    if sweep:
        # Rows [0, v1..v15]: max 0, so d = v exactly; the sums span [1, 16]. Head gradient
        # [1, 0, ..., 0]: the sum of dy is 1 and, on the AVX-512 path, dx_j = -exp(y_j) exactly.
        v = sweep_values().reshape(-1, 15)
        chunk = 65536
        n_chunks = (len(v) + chunk - 1) // chunk
        v = np.concatenate([v, np.full((n_chunks * chunk - len(v), 15), F32(-1.0))])
        dy = np.zeros((chunk, 16), F32)
        dy[:, 0] = 1.0

        def make(t):
            x = np.zeros((chunk, 16), F32)
            x[:, 1:] = v[t * chunk:(t + 1) * chunk]
            return x, dy
        yield (chunk, 16), n_chunks, make
        return
    for shape, trials in SHAPES:
        c = shape[-1]
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1

        def make(t, shape=shape, c=c, rows=rows):
            x = np.stack([logits_row(rng, c) for _ in range(rows)]).reshape(shape)
            dy = np.stack([grad_row(rng, c) for _ in range(rows)]).reshape(shape)
            return x, dy
        yield shape, max(1, int(trials * scale)), make


def main():
    out = sys.argv[1]
    scale = 1.0
    sweep = "--sweep" in sys.argv
    if "--trials-scale" in sys.argv:
        scale = float(sys.argv[sys.argv.index("--trials-scale") + 1])
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20240601)
    libc = ctypes.CDLL(None)
    # oneDNN's verbose lines go to the C stdout: collect them in a file
    vfile = tempfile.NamedTemporaryFile(prefix="lsm_verbose_", delete=False)
    saved = os.dup(1)
    os.dup2(vfile.fileno(), 1)
    names = []
    try:
        for shape, trials, make in datasets(rng, scale, sweep):
            c = shape[-1]
            rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
            name = "x".join(map(str, shape))
            xs, dys, ys, dxs, yis = [], [], [], [], []
            for t in range(trials):
                x, dy = make(t)
                xa = nd.array(x, dtype=F32)
                xa.attach_grad()
                with autograd.record():
                    ya = nd.log_softmax(xa, axis=-1)
                ya.backward(nd.array(dy, dtype=F32))
                yi = nd.log_softmax(nd.array(x, dtype=F32), axis=-1)
                xs.append(x); dys.append(dy); ys.append(ya.asnumpy()); dxs.append(xa.grad.asnumpy())
                yis.append(yi.asnumpy())
            with open(os.path.join(out, name + ".bin"), "wb") as f:
                for arrs in (xs, dys, ys, dxs, yis):
                    np.ascontiguousarray(np.stack(arrs), F32).tofile(f)
            names.append((name, rows, c, trials))
            print("ran", name, trials, "trials", file=sys.stderr, flush=True)
    finally:
        nd.waitall()
        libc.fflush(None)
        os.dup2(saved, 1)
    text = open(vfile.name).read()
    os.unlink(vfile.name)
    with open(os.path.join(out, "index.txt"), "w") as idx:
        for name, rows, c, trials in names:
            impl = {"forward": set(), "backward": set()}
            for line in text.splitlines():
                if "alg:logsoftmax" not in line or not line.startswith("dnnl_verbose,exec"):
                    continue
                fields = line.split(",")
                if fields[-2] != name:  # the problem description, e.g. 64x10
                    continue
                kind = "backward" if fields[5] == "backward_data" else "forward"
                impl[kind].add(fields[4])
            idx.write("%s %d %d %d %s %s\n" % (name, rows, c, trials, "+".join(sorted(impl["forward"])) or "none",
                                               "+".join(sorted(impl["backward"])) or "none"))
    print(open(os.path.join(out, "index.txt")).read(), file=sys.stderr)


if __name__ == "__main__":
    main()
