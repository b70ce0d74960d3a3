"""PyTorch on the workloads W1-W5, eager and torch.compile, written as a torch user would.

Runs in .venv-bench (see requirements-bench.txt), one workload per process; run_all.py starts it.
Inputs and initial weights come from reference.py, and every system's result of them is checked
against the float64 reference before timing. torch is synchronous on the CPU: a call's result is
ready when it returns. torch.compile's first call (tracing and compiling, outside the timed
region) is reported as compile seconds.

    .venv-bench/bin/python benchmarks/peer_torch.py --workload W3 [--json out.json]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import peer_common  # noqa: E402
import reference  # noqa: E402
from peer_common import Row, first_call_seconds  # noqa: E402

R = reference
torch.manual_seed(R.SEED)


def t(a):
    return torch.from_numpy(np.array(a, copy=True))


# ------------------------------------------------------------------------------------- W1, W2

def w1_chain(x):
    for _ in range(R.W1["reps"]):
        x = torch.relu(x * R.W1["mul"] + R.W1["add"])
    return x


def w2_chain(x):
    for _ in range(R.W2["reps"]):
        x = torch.tanh(x * R.W2["mul"] + R.W2["add"]) * torch.sigmoid(x)
    return x


def chain_builders(workload, chain, x_np):
    x = t(x_np)

    def eager():
        return Row("torch eager", lambda: chain(x), check=R.check(workload, chain(x).numpy()))

    def compiled():
        fn = torch.compile(chain)
        secs, y = first_call_seconds(lambda: fn(x))
        return Row("torch.compile", lambda: fn(x), compile_s=secs, check=R.check(workload, y.numpy()))

    return [("torch eager", eager), ("torch.compile", compiled)]


# ------------------------------------------------------------------------------------------ W3

class MLP:
    """nn.Sequential + CrossEntropyLoss (mean) + optim.SGD; `model_wrap` is torch.compile or not."""

    def __init__(self, model_wrap=None):
        weights, biases, x, labels = R.w3_inputs()
        sizes = R.W3["sizes"]
        layers = []
        for i, (nin, nout) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(nin, nout))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.model = nn.Sequential(*layers)
        self.linears = [m for m in self.model if isinstance(m, nn.Linear)]
        with torch.no_grad():
            for lin, w, b in zip(self.linears, weights, biases):
                lin.weight.copy_(t(w))
                lin.bias.copy_(t(b))
        self.forward = model_wrap(self.model) if model_wrap else self.model
        self.loss_fn = nn.CrossEntropyLoss()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=R.W3["lr"])
        self.x, self.y = t(x), torch.from_numpy(labels)

    def step(self):
        self.opt.zero_grad()
        loss = self.loss_fn(self.forward(self.x), self.y)
        loss.backward()
        self.opt.step()
        return loss

    def result(self, losses):
        return R.w3_result([float(v) for v in losses], [m.weight.detach().numpy() for m in self.linears],
                           [m.bias.detach().numpy() for m in self.linears])


def w3_builders():
    def eager():
        m = MLP()
        losses = [m.step().item() for _ in range(R.CHECK_STEPS)]
        return Row("torch eager", m.step, check=R.check("W3", m.result(losses)),
                   note="nn.Sequential, nn.CrossEntropyLoss, optim.SGD (default: for-loop update on CPU)")

    def compiled():
        m = MLP(torch.compile)
        secs, loss0 = first_call_seconds(lambda: m.step().item())
        losses = [loss0] + [m.step().item() for _ in range(R.CHECK_STEPS - 1)]
        return Row("torch.compile", m.step, compile_s=secs, check=R.check("W3", m.result(losses)),
                   note="model = torch.compile(model) (forward; backward compiled by AOTAutograd); "
                        "loss and optim.SGD eager; compile s = first step")

    return [("torch eager", eager), ("torch.compile", compiled)]


# ------------------------------------------------------------------------------------------ W4

def w4_builders():
    w_ih, w_hh, b_ih, b_hh, xs_np, h0_np, c0_np = R.w4_inputs()
    cell = nn.LSTMCell(R.W4["input"], R.W4["hidden"])
    with torch.no_grad():
        for p, v in ((cell.weight_ih, w_ih), (cell.weight_hh, w_hh), (cell.bias_ih, b_ih), (cell.bias_hh, b_hh)):
            p.copy_(t(v))
    xs = list(t(xs_np).unbind(0))  # split up front, as the MXNet script does
    h0, c0 = t(h0_np), t(c0_np)

    def sequence(xs, h, c):
        for x in xs:
            h, c = cell(x, (h, c))
        return h, c

    def run(fn):
        with torch.no_grad():  # forward only
            return fn(xs, h0, c0)

    def result(hc):
        return [v.numpy() for v in hc]

    def eager():
        return Row("torch eager", lambda: run(sequence), check=R.check("W4", result(run(sequence))),
                   note="nn.LSTMCell called %d times under torch.no_grad()" % R.W4["T"])

    def compiled():
        fn = torch.compile(sequence)
        secs, hc = first_call_seconds(lambda: run(fn))
        return Row("torch.compile", lambda: run(fn), compile_s=secs, check=R.check("W4", result(hc)),
                   note="torch.compile of the function holding the Python loop (whole sequence)")

    return [("torch eager", eager), ("torch.compile", compiled)]


# ------------------------------------------------------------------------------------------ W5

class Updates:
    """200 parameters with fixed gradients and an optim.SGD(momentum) over them."""

    def __init__(self, **opt_kw):
        ws, gs = R.w5_inputs()
        self.params = [nn.Parameter(t(w)) for w in ws]
        for p, g in zip(self.params, gs):
            p.grad = t(g)
        self.opt = torch.optim.SGD(self.params, lr=R.W5["lr"], momentum=R.W5["momentum"], **opt_kw)

    def weights(self):
        return [p.detach().numpy() for p in self.params]


def w5_builders():
    def eager(name, **kw):
        def build():
            u = Updates(**kw)
            for _ in range(R.CHECK_STEPS):
                u.opt.step()
            return Row(name, u.opt.step, check=R.check("W5", u.weights()))
        return name, build

    def compiled():
        u = Updates(foreach=True)

        @torch.compile(fullgraph=False)
        def step():
            u.opt.step()

        secs, _ = first_call_seconds(step)
        for _ in range(R.CHECK_STEPS - 1):
            step()
        return Row("torch.compile", step, compile_s=secs, check=R.check("W5", u.weights()),
                   note="opt.step() inside a torch.compile'd function (foreach SGD), "
                        "the compiled-optimizer recipe")

    return [eager("torch eager (for-loop)", foreach=False), eager("torch eager (foreach)", foreach=True),
            eager("torch eager (fused)", fused=True), ("torch.compile", compiled)]


def main():
    workload = peer_common.workload_arg()
    builders = {"W1": lambda: chain_builders("W1", w1_chain, R.w1_input()),
                "W2": lambda: chain_builders("W2", w2_chain, R.w2_input()),
                "W3": w3_builders, "W4": w4_builders, "W5": w5_builders}[workload]()
    env = peer_common.env_lines("torch %s, numpy %s" % (torch.__version__, np.__version__))
    env.append("threads: torch.get_num_threads()=%d, interop=%d, OMP_NUM_THREADS=%s"
               % (torch.get_num_threads(), torch.get_num_interop_threads(),
                  os.environ.get("OMP_NUM_THREADS", "(unset)")))
    peer_common.run(workload, builders, env)


if __name__ == "__main__":
    main()
