"""`@minpy_jit.function`: the decorator, and what a decorated function does on a call.

    @minpy_jit.function
    def step(x, w, b, scale):
        h = nd.relu(nd.dot(x, w) + b)     # fragment 0 (with the loop, unrolled)
        for _ in range(3):
            h = h * scale + 0.5
        if h.shape[0] > 16:               # boundary: stays Python
            h = nd.tanh(h)                # fragment 1
        return h

Decoration analyses the source (analyze.py) and builds the rewritten function
(codegen.py) whose fragments are C++ calls (fragment.py / fragment.cc). A call:

* `MINPY_JIT=0`: the original function, untouched.
* a function the pass cannot handle (no source, a generator, exec/locals...):
  the original function inside `jit()` -- recorded, never an error, never a
  different result; the reason is logged and shown by explain().
* otherwise the rewritten function. If its body is one fragment, a call outside
  any jit() scope is one guard check plus one graph launch; inside a scope the
  fragment joins the scope's trace. With boundaries, the call opens a jit()
  scope of its own so the Python parts are still recorded.

Methods work (the decorator is a descriptor); `minpy_jit.function(block)` makes
a Gluon block's call a fragment (see BlockFunction).
"""
import functools
import os
import threading
import types

from mxnet.gluon.block import Block

from .. import _core
from ..scope import _disabled, jit
from . import analyze, codegen
from .fragment import MAX_REFUSALS, Fragment

_LOG_KEEP = 64

# Decorations made so far per site text: a scope's recompile counters and its lifted-scalar
# decisions are kept per site (runtime.h's Site), and two functions with one name at one line
# (closures made by one factory, files of one name in two directories) must not share them.
_site_counts = {}
_site_lock = threading.Lock()


def _own_site(text):
    """`text` for the first function decorated there, `text #n` for the n-th."""
    with _site_lock:
        n = _site_counts.get(text, 0) + 1
        _site_counts[text] = n
    return text if n == 1 else "%s #%d" % (text, n)


class Function:
    """A function compiled into fragments (see the module docstring)."""

    __minpy_jit_function__ = True

    def __init__(self, fn, name=None):
        if not callable(fn):
            raise TypeError("minpy_jit.function expects a function, got %r" % (fn,))
        functools.update_wrapper(self, fn)
        self.original = fn
        code = getattr(fn, "__code__", None)
        where = "%s:%d" % (os.path.basename(code.co_filename), code.co_firstlineno) if code else "?"
        self.site = _own_site("@function %s (%s)" % (name or getattr(fn, "__qualname__", repr(fn)), where))
        self.breaks = {}          # line -> why the statement there stays Python (graph breaks)
        self.messages = []        # recent log lines (explain shows them)
        self.fallback_reason = None
        self.plan = None
        self.fragments = []
        self.compiled = None
        self._pending_breaks = {}  # (fragment, line) -> refusals seen
        self.hints = None
        self._build()
        from .hints import compile_ahead, parse_hints
        self.hints = parse_hints(fn)
        if self.hints is not None and self.compiled is not None:
            compile_ahead(self)

    # ------------------------------------------------------------ building

    def _build(self):
        try:
            plan = analyze.analyze(self.original, self.breaks)
        except analyze.Unsupported as e:
            self.fallback_reason = str(e)
            self.plan, self.fragments, self.compiled = None, [], None
            self.log("runs under jit() recording as a whole: %s" % e)
            return
        fragments = [Fragment(self, plan, spec) for spec in plan.fragments]
        scoped = not plan.single_fragment
        for f in fragments:
            _core.fragment_set_direct_in_own_scope(f.handle, scoped and f.spec.flush_follows)
        self.compiled = codegen.rewritten_function(plan, [f.call for f in fragments],
                                                   self._enter if scoped else None,
                                                   self._exit if scoped else None)
        self.plan, self.fragments = plan, fragments

    def _enter(self):
        _core.open_scope(self.site)

    def _exit(self):
        _core.close_scope()

    # ------------------------------------------------------------ calls

    @staticmethod
    def enabled():
        return not _disabled()

    def __call__(self, *args, **kwargs):
        if _disabled():
            return self.original(*args, **kwargs)
        if self.hints is not None:
            self.hints.check(args, kwargs)
        compiled = self.compiled
        if compiled is None:
            with jit(site=self.site):
                return self.original(*args, **kwargs)
        original = self.original
        if compiled.__defaults__ is not original.__defaults__ or compiled.__kwdefaults__ is not original.__kwdefaults__:
            # defaults rebound on the original after decoration: a call uses the new ones
            compiled.__defaults__, compiled.__kwdefaults__ = original.__defaults__, original.__kwdefaults__
        return compiled(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return types.MethodType(self, obj)

    # ------------------------------------------------------------ events from fragments

    def log(self, message):
        self.messages.append(message)
        del self.messages[:-_LOG_KEEP]
        if _core.config()["log_recompiles"]:
            from ..diagnostics import _log
            _log("minpy_jit: %s: %s" % (self.site, message))

    def captured(self, fragment):
        limit = _core.config()["recompile_limit"]
        n = fragment.variants()
        if n > limit:
            fragment.disable("compiled %d variants (recompile_limit %d)" % (n, limit))
            self.log("WARNING: %s compiled %d variants (recompile_limit %d); it runs as Python under jit() "
                     "from now on. Last guard that failed: %s" % (fragment.label(), n, limit,
                                                                  _core.fragment_info(fragment.handle)["last_miss"]))

    def refused(self, fragment, reason, line, static=True, subject=None):
        """A capture that cannot be replayed. A refusal at a known statement splits the fragment
        there (a graph break: the statement stays Python) -- at once for what the Python checks
        found, at the second time for what the recorder found (it can be a first-call effect,
        such as a Gluon parameter's deferred initialisation), or for a first-call effect the
        checks name on the same object (`subject`: a trainer's first step, counted per trainer)."""
        at = fragment.statement_at(line)
        self.log("%s cannot be replayed: %s%s" % (fragment.label(), reason,
                                                  " (line %d)" % line if line else ""))
        if at is not None and fragment is self._fragment_of(fragment):
            key = (fragment.spec.index, at, reason, subject)  # the same reason again: not a one-off
            if len(self._pending_breaks) > 1024:  # bounded: one entry per new trainer or block
                self._pending_breaks.clear()
            seen = self._pending_breaks.get(key, 0) + 1
            self._pending_breaks[key] = seen
            if static or seen >= 2:
                self.breaks[at] = reason
                self.log("graph break at line %d: the statement stays Python" % at)
                self._pending_breaks.clear()
                self._build()
                return
        fragment.refusals.append((reason, line))
        if subject is None:  # a first call of one object or another never disables the fragment
            fragment.lasting_refusals += 1
        if fragment.lasting_refusals >= MAX_REFUSALS:
            fragment.disable(reason)
            self.log("%s runs as Python under jit() from now on: %s" % (fragment.label(), reason))

    def _fragment_of(self, fragment):
        """The current fragment object for this spec (None once the function was planned again)."""
        for f in self.fragments:
            if f is fragment:
                return f
        return None

    # ------------------------------------------------------------ diagnostics

    def explain(self, *args, **kwargs):
        """Runs the function once and describes its fragments, boundaries, guards and graphs."""
        from .explain import explain_function
        return explain_function(self, args, kwargs)

    def __repr__(self):
        return "<minpy_jit.function %s>" % self.site


class BlockFunction(Function):
    """`minpy_jit.function(block)`: the block's call as one fragment.

    Calling it is `block(*args)`: its forward (hooks, hybrid_forward, parameters) runs
    under capture once per guard set and is replayed afterwards. Other attributes
    (collect_params, hybridize, ...) are the block's own.
    """

    def __init__(self, block):
        self.block = block

        def forward(*args):
            return block(*args)

        forward.__qualname__ = "%s(forward)" % type(block).__name__
        Function.__init__(self, _with_source(forward, "def forward(*args):\n    return block(*args)\n"),
                          name="%s.forward" % type(block).__name__)

    def __getattr__(self, name):
        return getattr(self.__dict__["block"], name)


def _with_source(fn, source):
    """Gives a synthesized function a source the analysis can read (via linecache)."""
    import linecache
    filename = "<minpy_jit %s>" % fn.__qualname__
    code = compile(source, filename, "exec")
    ns = {}
    exec(code, {"block": fn.__closure__[0].cell_contents if fn.__closure__ else None}, ns)  # noqa: S102
    out = types.FunctionType(ns["forward"].__code__, ns["forward"].__globals__, "forward", None, None)
    out.__qualname__ = fn.__qualname__
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return out


def function(fn=None):
    """Compiles a function's tensor code from its source (see minpy_jit.fragments)."""
    if fn is None:
        return function
    if isinstance(fn, Function):
        return fn
    if isinstance(fn, Block):
        return BlockFunction(fn)
    if isinstance(fn, types.MethodType) and isinstance(fn.__self__, Block) and fn.__name__ in ("forward",
                                                                                              "__call__"):
        if fn.__func__ in (Block.__call__,) or fn.__func__.__module__.startswith("mxnet.gluon"):
            return BlockFunction(fn.__self__)
    if isinstance(fn, types.MethodType):
        return types.MethodType(Function(fn.__func__), fn.__self__)
    return Function(fn)
