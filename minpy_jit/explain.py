"""`explain(fn, *args)`: run a function once under jit() and say what happened."""
from . import _core
from .scope import jit


_calls = 0


class Explanation:
    """What one run did: graphs compiled or reused, flushes with their causes and
    source lines, eager fallbacks and why (fallback_reasons: "op: reason" -> count, ops a
    kvstore updater or CustomOp ran included), and why each cache miss missed."""

    def __init__(self, result, events, stats_before, stats_after):
        self.result = result
        self.flushes = events
        self.compiles = [e for e in events if not e["hit"] and not e["eager"] and not e.get("direct")]
        self.hits = [e for e in events if e["hit"]]
        self.eager = [e for e in events if e["eager"]]
        before = stats_before["fallbacks"]
        self.fallbacks = {op: n - before.get(op, 0) for op, n in stats_after["fallbacks"].items()
                          if n - before.get(op, 0) > 0}
        why = stats_before["fallback_reasons"]
        self.fallback_reasons = {r: n - why.get(r, 0) for r, n in stats_after["fallback_reasons"].items()
                                 if n - why.get(r, 0) > 0}
        self.ops_recorded = stats_after["ops_recorded"] - stats_before["ops_recorded"]

    def __str__(self):
        out = ["%d ops recorded, %d flushes: %d compiled, %d cache hits, %d eager"
               % (self.ops_recorded, len(self.flushes), len(self.compiles), len(self.hits), len(self.eager))]
        for i, e in enumerate(self.flushes):
            what = ("hit %s" % e["key"]) if e["hit"] else ("eager" if e["eager"] else
                                                           "one update, launched directly" if e.get("direct") else
                                                           "compiled %s in %.2f ms" % (e["key"], e["compile_ms"]))
            out.append("  flush %d: %s at %s, %d ops -> %s" % (i, e["cause"], e["where"], e["ops"], what))
            if e["miss_reason"]:
                out.append("           miss: %s" % e["miss_reason"])
        for op, n in sorted(self.fallbacks.items()):
            out.append("  eager fallback: %s x%d" % (op, n))
        for reason, n in sorted(self.fallback_reasons.items()):
            out.append("           why: %s (x%d)" % (reason, n))
        return "\n".join(out)

    __repr__ = __str__


def explain(fn, *args, **kwargs):
    """Runs fn(*args, **kwargs) inside jit() once; returns an Explanation (its .result is fn's).

    Each call is a scope site of its own: explaining many functions never trips the
    recompile limit of one shared site. For a @minpy_jit.function, this is fn.explain(*args):
    its fragments, boundaries, guards and graphs.
    """
    if getattr(fn, "__minpy_jit_function__", False) and hasattr(fn, "explain"):
        return fn.explain(*args, **kwargs)
    global _calls
    _calls += 1
    before = _core.stats()
    with jit(site="explain call %d" % _calls):
        result = fn(*args, **kwargs)
    after = _core.stats()
    flushed = sum(after["flushes"].values()) - sum(before["flushes"].values())
    new = _core.events()[-flushed:] if flushed else []
    return Explanation(result, new, before, after)
