"""Threads and direct kernel launches (cpp/src/kernel_launch.h): several threads run graphs made
only of our fused kernels at once -- @function fragments on shared inputs, jit() blocks writing
with out= into arrays of their own, inputs still being computed by MXNet's worker, a graph of two
kernels -- and every result must equal eager MXNet's, bit for bit.

    PYTHONPATH=. .venv/bin/python tests/stress/kernel_launch_threads.py --threads 4 --iterations 40000

Exit status 1 if any result differs or a thread raised. Not collected by pytest (the suite runs a
short version: tests/test_kernel_launch.py::test_threads_calling_one_fragment).
"""
import argparse
import sys
import threading
import time

import numpy as np
from mxnet import nd

import minpy_jit


def chain(x, reps):
    for _ in range(reps):
        x = nd.relu(x * 1.01 + 0.5)
    return x


def two_kernels(x, row):
    return nd.relu(x) * 2 - nd.broadcast_add(x, row) * 0.5 + x


def into(x, out):
    nd.relu(x * 1.01 + 0.5, out=out)
    return nd.relu(out * 1.01 + 0.5) * 1.01 + 0.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=10000, help="per thread")
    args = ap.parse_args()
    chain_fn, two_fn = minpy_jit.function(chain), minpy_jit.function(two_kernels)
    rs = np.random.RandomState(0)
    shared = nd.array(rs.uniform(-1, 1, (64, 64)).astype(np.float32))
    row = nd.array(rs.uniform(-1, 1, (1, 64)).astype(np.float32))
    big = nd.array(rs.uniform(-1, 1, (256, 256)).astype(np.float32))
    pending_input = lambda: nd.slice(nd.dot(big, big), begin=(0, 0), end=(64, 64))  # noqa: E731
    want = {
        "chain3": chain(shared, 3).asnumpy(), "chain7": chain(shared, 7).asnumpy(),
        "two": two_kernels(shared, row).asnumpy(), "pending": chain(pending_input(), 3).asnumpy(),
        "into": into(shared, nd.zeros((64, 64))).asnumpy(),
    }
    errors = []

    def worker(seed):
        pick = np.random.RandomState(seed)
        own = nd.zeros((64, 64))
        try:
            for i in range(args.iterations):
                case = ("chain3", "chain7", "two", "pending", "into", "two_jit")[pick.randint(6)]
                if case in ("chain3", "chain7"):
                    got = chain_fn(shared, int(case[-1]))
                elif case == "two":
                    got = two_fn(shared, row)
                elif case == "pending":
                    got = chain_fn(pending_input(), 3)
                elif case == "into":
                    with minpy_jit.jit():
                        got = into(shared, own)
                else:
                    with minpy_jit.jit():
                        got = two_kernels(shared, row)
                    case = "two"
                if not np.array_equal(got.asnumpy(), want[case]):
                    errors.append((seed, i, case))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((seed, "raised", repr(e)))

    before = minpy_jit.stats()["kernels_launched_directly"]
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(args.threads)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    launched = minpy_jit.stats()["kernels_launched_directly"] - before
    print("%d threads x %d iterations in %.1f s: %d direct launches, %d differences %s"
          % (args.threads, args.iterations, time.time() - t0, launched, len(errors), errors[:5]))
    print("PASS" if not errors and launched > 0 else "FAIL")
    return 0 if not errors and launched > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
