"""minpy_jit fuzz reproducer: seed 11220377 (FIXED; pre-existing: 55a9a11 differed alike).

With config(fuse=False) and backward() inside the scope, a variable's gradient was -0.0 where
eager MXNet gives +0.0: the head broadcast_greater(q, q) hands q two zero nodes, which eager's
aggregation (AggregateGradient) drops from the sum, so q's gradient is a zero node and the
division making q is skipped; MXNet's gradient pass run inside our graph
(cpp/src/grad_graph.cc) summed them with its default aggregation and computed _backward_div
of that zero, 0 / (-3.88) = -0. Such a backward is left to MXNet now (parts.h:
eager_gradient_pass with sums_zero_nodes, backward.cc). Exits 1 while they differ:

    PYTHONPATH=. .venv/bin/python tests/stress/repros/repro_seed11220377.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(11220377)
    S = [0.1, 0.3, 2.7, -1.1, 0.7000000000000001]  # scalars that change from one iteration to the next
    a24 = nd.array(RNG.uniform(-2.0, 2.0, (1, 5,)), dtype='float32')
    a25 = nd.array(RNG.uniform(-2.0, 2.0, (4, 5,)), dtype='float32')
    a29 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4,)), dtype='float32')
    a29.attach_grad()
    try:
        with J():
            with autograd.record():
                a26 = nd.dot(a24, a25, transpose_b=True)
                a30 = a29 / a26
                a31 = nd.broadcast_greater(a30, a30)
            a31.backward()
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 11220377, exact=True, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
