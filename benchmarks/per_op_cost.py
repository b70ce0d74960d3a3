"""Where an op recorded inside jit() spends its time (issues 11 and 13): process CPU ns per op.

W1's chain (x = relu(x * 1.01 + 0.5), 100 times: 300 ops) recorded inside jit(), split as
  record      the 300 calls as the user writes them (segments flushed meanwhile included);
  invoke      the same 300 ops as direct _core.invoke calls: the recorder alone;
  python      record - invoke: the Python between the user's line and the recorder (MXNet's
              generated op functions and NDArray operators, or frontend.py's stand-ins);
  wrapper     the user's calls with MXNet's invoke stubbed out by a Python function, minus
              `stub`, the cost of calling that stub: MXNet's own layers (the stubbed invoke
              makes frontend.py's operator stand-ins run MXNet's methods);
and W5's op form (200 nd.sgd_mom_update(w, g, m, lr, momentum, out=w) calls) recorded:
  w5_record   CPU us for the 200 calls (scope exit not timed).
Medians of repeated scopes; the machine is shared: compare builds in alternating runs.

    .venv/bin/python benchmarks/per_op_cost.py [repeats]
"""
import ctypes
import os
import statistics
import sys
import time

import mxnet.ndarray.register as _register
from mxnet import nd
from mxnet.base import _LIB, c_str

import minpy_jit
from minpy_jit import _core

REPS = 100
cpu = time.process_time_ns


def op_handle(name):
    h = ctypes.c_void_p()
    _LIB.NNGetOpHandle(c_str(name), ctypes.byref(h))
    return h.value


def chain(x):
    for _ in range(REPS):
        x = nd.relu(x * 1.01 + 0.5)
    return x


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    x0 = nd.ones((32, 32))
    ws = [nd.ones((64, 64)) for _ in range(200)]
    gs = [nd.ones((64, 64)) * 0.01 for _ in range(200)]
    ms = [nd.zeros((64, 64)) for _ in range(200)]
    nd.waitall()
    mul, plus, relu = op_handle("_mul_scalar"), op_handle("_plus_scalar"), op_handle("relu")
    invoke = _core.invoke
    out_stub = nd.zeros((32, 32))

    def stub(*args):
        return out_stub

    def record():
        with minpy_jit.jit():
            t0 = cpu()
            chain(x0)
            dt = cpu() - t0
        return dt

    def invoke_only():
        with minpy_jit.jit():
            t0 = cpu()
            x = x0
            for _ in range(REPS):
                x = invoke(mul, [x], ["scalar"], [1.01], None, False, False)
                x = invoke(plus, [x], ["scalar"], [0.5], None, False, False)
                x = invoke(relu, [x], [], [], None, False, False)
            dt = cpu() - t0
        return dt

    def wrapper():
        with minpy_jit.jit():
            _register._imperative_invoke = stub
            try:
                t0 = cpu()
                chain(x0)
                dt = cpu() - t0
            finally:
                _register._imperative_invoke = invoke
        return dt

    def stub_calls():
        t0 = cpu()
        for _ in range(REPS):
            stub(1, 2, 3, 4, 5, 6, 7)
            stub(1, 2, 3, 4, 5, 6, 7)
            stub(1, 2, 3, 4, 5, 6, 7)
        return cpu() - t0

    def w5_record():
        with minpy_jit.jit():
            t0 = cpu()
            for w, g, m in zip(ws, gs, ms):
                nd.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9, out=w)
            dt = cpu() - t0
        return dt * (3 * REPS) / 200  # divided by 3 * REPS below like the others: ns per update call

    parts = {"record": record, "invoke": invoke_only, "wrapper": wrapper, "stub": stub_calls,
             "w5_record": w5_record}
    for fn in parts.values():
        for _ in range(5):
            fn()
    samples = {k: [] for k in parts}
    for _ in range(repeats):
        for k, fn in parts.items():
            samples[k].append(sum(fn() for _ in range(10)) / 10 / (3 * REPS))
    med = {k: statistics.median(v) for k, v in samples.items()}
    print("ns/op: record %.0f  invoke %.0f  python %.0f  wrapper %.0f (stub %.0f)  |  W5 op form: %.0f ns/update"
          " call  |  load %.2f" % (med["record"], med["invoke"], med["record"] - med["invoke"],
                                   med["wrapper"] - med["stub"], med["stub"], med["w5_record"], os.getloadavg()[0]))


if __name__ == "__main__":
    main()
