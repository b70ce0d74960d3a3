"""Eager MXNet alone (minpy_jit never imported) reading memory it never wrote: the same call gives
other values depending on what the process ran before. These are bad_input_sweep.py's eager-varies
cases; jit() cannot match them (README in this directory). Each call is made 4 times, each after
disturbing the heap another way (freed arrays of other sizes and contents, a temp-workspace user).

    .venv/bin/python tests/stress/repros/eager_reads_unwritten_memory.py
"""
import mxnet as mx
import numpy as np

RS = np.random.RandomState(0)
F23 = RS.uniform(0.1, 0.9, (2, 3)).astype(np.float32)
F423 = np.random.RandomState(0).uniform(0.1, 0.9, (4, 2, 3)).astype(np.float32)
LABEL23 = np.random.RandomState(1).uniform(0.1, 0.9, (2, 3)).astype(np.float32)  # the sweep's


def disturb(k):
    keep = [mx.nd.full((n,), 777.0 + k) for n in (2, 3, 4, 6, 8, 16, 32)[:k + 1]]
    keep.append(mx.nd.sort(mx.nd.array(np.random.RandomState(k).uniform(size=(50000,)))))
    keep.append(mx.nd.softmax(mx.nd.full((4096,), 3.0 + k)))
    mx.nd.waitall()
    del keep
    mx.nd.waitall()


def failed_result(fn):
    """The second result of a call that failed while it ran (the first read raises)."""
    r = fn()
    try:
        r[0].asnumpy()
    except mx.MXNetError:
        pass
    return r[1].asnumpy()


CASES = {
    # the kernel rejects float16 bins while it runs: bin_edges is never written
    "histogram, float16 bins (failed: bin_edges)": lambda: failed_result(lambda: mx.nd._internal._histogram(
        mx.nd.array([0.5, 0.6, 0.7]), mx.nd.array([0.1, 0.5, 0.9], dtype="float16"))),
    # legacy shapes: a weight of shape (0, 3) is 'unknown', the result takes the gradient's (2, 3)
    # shape, and the kernel updates weight.size() == 0 elements: the result is never written
    "sgd_mom_update, weight (0, 3)": lambda: mx.nd.sgd_mom_update(
        mx.nd.array(np.zeros((0, 3), np.float32)), mx.nd.array(F23), mx.nd.array(F23), lr=0.1).asnumpy(),
    # a NaN rescale_grad array: the update returns without writing its result
    "mp_adamw_update, rescale_grad NaN": lambda: mx.nd.contrib.mp_adamw_update(
        *[mx.nd.array(F23) for _ in range(5)], mx.nd.array([np.nan]), lr=0.1, eta=1.0).asnumpy(),
    # labels beyond the alphabet (3): CTC reads out of bounds
    "CTCLoss, labels 1000": lambda: mx.nd.CTCLoss(
        mx.nd.array(F423), mx.nd.full((2, 2), 1000.0)).asnumpy(),
    # labels of fractions (all 0, the blank) one longer than the sweep's (2, 2)
    "CTCLoss, label (2, 3) of fractions": lambda: mx.nd.CTCLoss(
        mx.nd.array(F423), mx.nd.array(LABEL23)).asnumpy(),
}


def gather_nd_nan(make):
    """NaN indices become INT_MIN: gather_nd reads outside its data (the value depends on where
    the data array was allocated)."""
    with mx.util.np_shape(True), mx.util.np_array(True):
        d = make(mx.np.array(F23))
        return mx.npx.gather_nd(d, mx.np.array(np.full((2, 3), np.nan, np.float32))).asnumpy()


def main():
    for name, fn in CASES.items():
        seen = []
        for k in range(4):
            disturb(k)
            seen.append(fn().ravel()[:3].tolist())
        print("%-45s %s" % (name, " | ".join(str(s) for s in seen)))
    seen = [gather_nd_nan(m).ravel()[:1].tolist() for m in (lambda a: a, lambda a: a.copy(), lambda a: a * 1,
                                                          lambda a: a)]
    print("%-45s %s" % ("npx.gather_nd, NaN indices", " | ".join(str(s) for s in seen)))


if __name__ == "__main__":
    main()
