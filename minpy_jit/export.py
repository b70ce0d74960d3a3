"""Compiled graphs as artifacts: MXNet symbol JSON, and Python source.

`to_python(graph)` turns a cached graph into a plain function that recomputes
it op by op with `mx.nd` calls -- readable, runnable without minpy_jit, and
the reference the tests hold compiled graphs to:

    def graph_3f2a9c1e(v0):
        v1 = _op('_mul_scalar')(v0, scalar='1.01')   # (32, 32) float32
        ...
        return (v300,)

Inputs are the graph's external arrays in recording order (`%N = input` lines
of the printout); the outputs are the arrays the flush wrote, in the order of
the printout's `return` line.
"""
import mxnet as mx


def _op(name):
    """The imperative function of an MXNet operator, by its registered name."""
    for module in (mx.nd._internal, mx.nd.op, mx.nd.contrib):
        fn = getattr(module, name, None)
        if fn is not None:
            return fn
    raise AttributeError("no mx.nd function for operator %r" % name)


def to_json(graph):
    """The graph as MXNet symbol JSON (load it with mx.sym.load_json)."""
    return graph["json"]


def to_python(graph, name=None):
    """Python source of a function recomputing `graph` (a dict from minpy_jit.graphs())."""
    name = name or "graph_" + graph["key"][:8]
    inputs = [s["value"] for s in graph["steps"] if s["input"]]
    lines = ["def %s(%s):" % (name, ", ".join("v%d" % v for v in inputs))]
    for s in graph["steps"]:
        if s["input"]:
            continue
        outs = ", ".join("v%d" % (s["value"] + i) for i in range(s["nout"]))
        args = ["v%d" % v for v in s["in"]] + ["%s=%r" % (k, v) for k, v in s["attrs"]]
        call = "_op(%r)(%s)" % (s["op"], ", ".join(args))
        if s["nout"] > 1:
            call += "[:%d]" % s["nout"]
        lines.append("    %s = %s   # %s %s" % (outs, call, tuple(s["shape"]), s["dtype"]))
    lines.append("    return (%s)" % "".join("v%d, " % v for v, _ in graph["outputs"]))
    return "\n".join(lines) + "\n"


def compile_python(graph, name=None):
    """`to_python`, executed: returns the function object."""
    src = to_python(graph, name)
    namespace = {"_op": _op, "mx": mx}
    exec(compile(src, "<minpy_jit graph %s>" % graph["key"][:8], "exec"), namespace)  # noqa: S102
    return namespace[name or "graph_" + graph["key"][:8]]
