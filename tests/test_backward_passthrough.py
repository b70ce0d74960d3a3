"""backward() run by MXNet's autograd over a recorded graph in which an input that needs no
gradient (plain data, not a variable) is read by an op whose gradient is its output gradient
passed through (elemwise_add, add_n). The graph is one _CachedOp node on MXNet's tape, and
MXNet 1.9.1's storage type inference for its backward fails on such an elemwise_add
('storage_type_num_unknown_nodes' at backward()); eager runs these programs. Found by the
fuzzer as seeds 75866, 418684, 422123 and 11 more (tests/stress/repros/README.md); fixed by
26f6d7b (elemwise_add runs as broadcast_add in a graph run under autograd), whose own test
cuts the forward by a read or a hybridized block; these are the fuzzer's forms.

MXNet's autograd (not a backward inside our graph) runs the backward when retain_graph=True or
under record(train_mode=False); both are used below. Gradients are compared bit for bit
(MXNet's own kernels: the exactness of our fused tanh is not what this is about).
"""
import pytest
from mxnet import autograd, nd

from conftest import assert_same, rand, run_both


def leaf(x, req="write"):
    x.attach_grad(grad_req=req)
    return x


PROGRAMS = {
    # seed 418684/75866: data + variable, then backward
    "add(data, w)": lambda d, w: nd.elemwise_add(d, w),
    "add(w, data)": lambda d, w: nd.elemwise_add(w, d),
    # seed 422123: the data is another recorded op's input
    "add(tanh(w), data)": lambda d, w: nd.elemwise_add(nd.tanh(w), d),
    "add(add(data, w), w)": lambda d, w: nd.elemwise_add(nd.elemwise_add(d, w), w),
    "add_n(data, w, tanh(w))": lambda d, w: nd.add_n(d, w, nd.tanh(w)),
    "add(data, tanh(tanh(tanh(w))))": lambda d, w: nd.elemwise_add(d, nd.tanh(nd.tanh(nd.tanh(w)))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("how", ["retain_graph", "train_mode=False", "grad_req=add twice"])
def test_backward_by_mxnet_through_a_passthrough_gradient(name, how, mxnet_kernels):
    f = PROGRAMS[name]

    def prog(d, w):
        leaf(w, "add" if how == "grad_req=add twice" else "write")
        with autograd.record(train_mode=how != "train_mode=False"):
            y = f(d, w)
        if how == "grad_req=add twice":
            y.backward(retain_graph=True)
            y.backward()
        else:
            y.backward(retain_graph=how == "retain_graph")
        return y, w.grad

    res = run_both(prog, nd.array(rand(2, 3, seed=1)), nd.array(rand(2, 3, seed=2)))
    assert_same(res.eager, res.jitted)
    assert res.stats["backward_by_mxnet"] >= 1  # the case this is about: MXNet's autograd ran it
