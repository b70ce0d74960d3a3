"""`f.explain(*args)` / `minpy_jit.explain(f, *args)` for a @minpy_jit.function.

Runs the function once, then lists what the pass made of it:

    @function step (model.py:10): 2 fragments, 1 boundary
      fragment 0  lines 11-13   inputs: x, w, b, scale, nd, range   outputs: h
        1 variant; calls 3, replayed 2, captured 1
        variant 0 (5 ops, graph 1 node, hits 2):
          argument `x`          shape (64, 784), float32, cpu(0)
          global `scale`        == 0.5 (float)
          ...
          graph ...                          (the compiled graph, one line per node)
      boundary    line 14       if: control flow stays Python
      fragment 1  line 15 ...

`Explanation.fragments[i].to_python()` gives a fragment's graph as plain mx.nd
code (export.to_python), and `.source` the fragment's statements as the
function body the pass compiled.
"""
from .. import _core
from ..export import to_python
from . import codegen


class FragmentReport:
    def __init__(self, function, fragment, info):
        self.index = fragment.spec.index
        self.lines = fragment.spec.lines
        self.inputs = list(fragment.spec.inputs)
        self.outputs = list(fragment.spec.outputs) + (["<return value>"] if fragment.spec.returns else [])
        self.info = info
        self.variants = info["variants"]
        self.disabled = fragment.disabled_reason
        self.refusals = list(fragment.refusals)
        self.source = codegen.body_source(function.plan, fragment.spec)
        self.name = "fragment_%d" % self.index

    def to_python(self, variant=0):
        """The graph of one variant as plain mx.nd code."""
        v = self.variants[variant]
        graph = {"key": v["key"], "steps": v["steps"], "outputs": [(o[0], o[1]) for o in v["outputs"]]}
        return to_python(graph, "%s_variant%d" % (self.name, variant))

    def __str__(self):
        out = ["  fragment %d  line%s %s   inputs: %s   outputs: %s" % (
            self.index, "s" if "-" in self.lines else "", self.lines, ", ".join(self.inputs) or "-",
            ", ".join(self.outputs) or "-")]
        i = self.info
        out.append("    %d variant%s; calls %d: replayed %d (%d as one graph launch, %d appended to a jit() trace), "
                   "missed %d" % (len(self.variants), "" if len(self.variants) == 1 else "s", i["calls"], i["hits"],
                                  i["direct"], i["appended"], i["misses"]))
        if i["last_miss"]:
            out.append("    last guard that failed: %s" % i["last_miss"])
        if self.disabled:
            out.append("    runs as Python under jit(): %s" % self.disabled)
        for reason, line in self.refusals:
            out.append("    a capture was refused: %s%s" % (reason, " (line %d)" % line if line else ""))
        for k, v in enumerate(self.variants):
            out.append("    variant %d: %d ops recorded, %s, hits %d%s" % (
                k, v["ops"], "graph of %d nodes" % v["graph_nodes"] if v["ir"] else "graph not built yet",
                v["hits"], _autograd_note(v)))
            out.append("      guards:")
            for g in v["guards"]:
                if g["kind"] in ("seq", "dict") and not g["what"].endswith("`"):
                    continue
                out.append("        %-40s %s%s" % (g["what"], g["check"], "   (%s)" % g["where"] if g["where"] else ""))
            if v["ir"]:
                out.append("      graph:")
                out.extend("        " + line for line in v["ir"].rstrip().splitlines())
            if v["eager_only"]:
                out.append("      MXNet refused the graph: %s" % v["compile_error"])
        return "\n".join(out)


class FunctionExplanation:
    """What the pass made of a decorated function (see the module docstring)."""

    def __init__(self, function, result):
        self.result = result
        self.site = function.site
        self.fallback = function.fallback_reason
        self.messages = list(function.messages)
        self.fragments = []
        self.boundaries = []
        self.source = None
        if function.plan is not None:
            for f in function.fragments:
                self.fragments.append(FragmentReport(function, f, f.info(compile_graphs=True)))
            self.boundaries = [(b.line, b.last_line, b.reason) for b in function.plan.boundaries]
            self.source = codegen.rewritten_source(function.plan)

    def __str__(self):
        if self.fallback:
            return "%s: not compiled, runs under jit() recording: %s" % (self.site, self.fallback)
        out = ["%s: %d fragment%s, %d boundar%s" % (self.site, len(self.fragments), "" if len(self.fragments) == 1
                                                    else "s", len(self.boundaries),
                                                    "y" if len(self.boundaries) == 1 else "ies")]
        items = [(f.info and int(f.lines.split("-")[0]), str(f)) for f in self.fragments]
        for line, last, reason in self.boundaries:
            span = "%d" % line if line == last else "%d-%d" % (line, last)
            items.append((line, "  boundary    line%s %s   %s" % ("s" if line != last else "", span, reason)))
        for _, text in sorted(items, key=lambda x: x[0]):
            out.append(text)
        if self.messages:
            out.append("  log:")
            out.extend("    " + m for m in self.messages[-12:])
        return "\n".join(out)

    __repr__ = __str__


def explain_function(function, args, kwargs):
    result = function(*args, **kwargs)
    return FunctionExplanation(function, result)


def _autograd_note(v):
    """How a variant meets autograd: called while recording, opening its own recording, and
    computing gradients inside its graph."""
    if v["gradients"]:
        return ", records its own autograd segment and runs backward() inside its graph (%d gradient%s)" % (
            v["gradients"], "" if v["gradients"] == 1 else "s")
    if v["recording"]:
        return ", autograd recording"
    return ", records its own autograd segment" if v["graph_recording"] else ""
