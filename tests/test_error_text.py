"""An error MXNet raises inside our runtime reaches the user as eager code gets it (issue 10,
item 7): the same exception type and text, never the C API call of ours that failed
("[without_gil([&] { return MXImperativeInvokeEx(...) })]") nor MXNet's raw stack order.

Paths: a recorded op replayed eagerly after its graph failed (flush.cc run_eagerly), read
through a guarded call, at an explicit flush() (a pybind11 function) or at the scope's exit;
a backward replayed through MXNet's pass; a graph launched in the background that failed
(launch.cc), whose exception carries a note saying so. Under NaiveEngine an op fails where it
runs, so those cases run in a child process (the engine is chosen at start-up).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from mxnet import autograd, nd

import minpy_jit


def _outcome(fn, use_jit):
    try:
        if use_jit:
            with minpy_jit.jit():
                fn()
        else:
            fn()
        return ("no error",)
    except Exception as e:  # noqa: BLE001 - the exception's type is what is compared
        return (type(e).__name__, str(e))


def _shuffled_backward():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = nd.shuffle(x * 2) * 3
    y.backward()
    x.grad.asnumpy()


def test_backward_through_an_op_without_gradient_raises_eagers_error():
    eager = _outcome(_shuffled_backward, False)
    assert eager[0] == "MXNetError" and "non-differentiable" in eager[1], eager
    got = _outcome(_shuffled_backward, True)
    assert got == eager
    assert "[" + "without_gil" not in got[1] and "MXAutogradBackwardEx" not in got[1]


_NAIVE_CHILD = r'''
import json, sys
import numpy as np, mxnet as mx
from mxnet import nd
import minpy_jit

gate = {"fail": True}


class Boom(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        if gate["fail"] or in_data[0].asnumpy().max() > 100:  # the data decides where it runs late
            raise RuntimeError("boom")
        self.assign(out_data[0], req[0], in_data[0] * 2)


@mx.operator.register("boom")
class BoomProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["data"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Boom()


def read():  # the graph fails, the replay raises at the read (a guarded call)
    y = nd.Custom(nd.ones((3,)) * 2, op_type="boom") + 1
    (y * 3).asnumpy()


def explicit_flush():  # ... at minpy_jit.flush() (pybind11)
    y = nd.Custom(nd.ones((3,)) * 2, op_type="boom") + 1
    if minpy_jit._core.depth():
        minpy_jit.flush()
    y.wait_to_read()


def scope_exit():  # ... at the end of the block
    nd.Custom(nd.ones((3,)) * 2, op_type="boom") + 1


XS = [nd.array(np.random.RandomState(i).uniform(-1, 1, (3,))) for i in range(140)]


BUMPS = [nd.full((3,), 1000.0 if step == 6 else 0.0) for step in range(8)]


def background():  # a segment of 142 arrays, launched in the background once compiled; step 6 fails
    gate["fail"] = False
    acc = nd.zeros((3,))
    for step in range(8):
        acc = acc + nd.Custom(nd.add_n(*XS) - acc + BUMPS[step], op_type="boom")
    acc.wait_to_read()


minpy_jit.config(segment_ops=3)
out = {}
for name in sys.argv[1].split(","):
    fn = globals()[name]
    seen = []
    for use_jit in (False, True):
        gate["fail"] = True
        minpy_jit.reset_stats()
        try:
            if use_jit:
                with minpy_jit.jit():
                    fn()
            else:
                fn()
            seen.append(["no error"])
        except Exception as e:
            seen.append([type(e).__name__, str(e), list(getattr(e, "__notes__", []))])
    seen.append(minpy_jit.stats()["background_launches"])
    out[name] = seen
print(json.dumps(out))
'''


def _naive_engine_outcomes(tmp_path, cases):
    script = tmp_path / "naive_errors.py"
    script.write_text(_NAIVE_CHILD)
    env = dict(os.environ, MXNET_ENGINE_TYPE="NaiveEngine")
    done = subprocess.run([sys.executable, str(script), ",".join(cases)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_graph_failing_while_it_runs_raises_eagers_error_wherever_it_surfaces(tmp_path):
    outcomes = _naive_engine_outcomes(tmp_path, ["read", "explicit_flush", "scope_exit"])
    for name, (eager, got, _) in outcomes.items():
        assert eager[0] == "MXNetError" and "CustomOpForward" in eager[1], (name, eager)
        assert got[:2] == eager[:2], (name, got, eager)
        assert "without_gil" not in got[1] and "MXImperativeInvokeEx" not in got[1], name


def test_a_failed_background_launch_raises_eagers_error_with_a_note(tmp_path):
    eager, got, launches = _naive_engine_outcomes(tmp_path, ["background"])["background"]
    assert launches >= 2, "not launched in the background"
    assert eager[0] == "MXNetError" and "CustomOpForward" in eager[1], eager
    assert got[:2] == eager[:2], (got, eager)
    assert any("launched in the background" in n for n in got[2]), got
