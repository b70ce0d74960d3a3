"""One fragment of a decorated function: its C++ state and what happens on a miss.

The rewritten function calls `Fragment.call` (a C builtin, fragment.cc): it checks
the guards of the fragment's variants and replays the first that holds. On a miss
it calls back `Fragment.on_miss`, which

* captures: runs the statements' capture body under the recorder (opening a
  jit() scope if none is open), then hands what they did to C++, which keeps it
  as a new variant -- or refuses, with the reason and the line;
* or runs them as plain Python (under the recorder) when the fragment is
  disabled (too many variants, too many refusals) or a variant cannot run here.

Refusals that name a line become graph breaks: the function is planned again
with that statement kept as Python (function.py decides).
"""
import os

from .. import _core
from . import capture as _capture
from .codegen import UNBOUND, fragment_bodies, outer_inputs, plain_body_reading_outer_names

MAX_REFUSALS = 3


class Fragment:
    def __init__(self, function, plan, spec):
        self.function = function
        self.plan = plan
        self.spec = spec
        self.inputs = spec.inputs
        self.short_file = os.path.basename(plan.filename)
        self.name = "%s: fragment %d (%s:%s)" % (plan.fn.__qualname__, spec.index, self.short_file, spec.lines)
        self.handle, self.call = _core.fragment_new(self.name, self.on_miss)
        self.plain, self.capture_body = fragment_bodies(plan, spec, _capture.HELPERS)
        self.capture_code = self.capture_body.__code__
        self.outer_inputs = outer_inputs(plan, spec)
        self._plain_reading_outer_names = None
        self.bare = len(spec.outputs) + (1 if spec.returns else 0) == 1
        self.refusals = []     # (reason, line) of captures that could not become variants
        self.lasting_refusals = 0  # those not blamed on one object's first call (see Function.refused)
        self.disabled_reason = None
        self.captures = 0
        self.plain_runs = 0

    def describe_input(self, name):
        return "%s `%s`" % (self.plan.kind_of(name), name)

    def input_where(self, name):
        return "%s:%d" % (self.short_file, self.spec.input_lines.get(name, self.spec.first_line))

    # ------------------------------------------------------------ misses

    def on_miss(self, *args):
        if any(args[i] is UNBOUND for i in self.outer_inputs):
            return self.run_with_missing_name(args)
        action, why = _core.fragment_pending(self.handle)
        if action == "plain" or self.disabled_reason is not None:
            return self.run_plain(args)
        if why:
            self.function.log("guard failed: %s; %s captured again" % (why, self.label()))
        return self.run_capture(args)

    def label(self):
        return "fragment %d (line%s %s)" % (self.spec.index, "s" if "-" in self.spec.lines else "", self.spec.lines)

    def _unpack(self, result):
        return result[0] if self.bare else result

    def run_plain(self, args, body=None):
        """The statements as written (`body`, else self.plain), recorded by jit() (in the
        caller's scope or one of their own)."""
        self.plain_runs += 1
        body = body or self.plain
        if _core.depth() > 0 or not self.function.enabled():
            return self._unpack(body(*args))
        _core.open_scope(self.function.site)
        try:
            return self._unpack(body(*args))
        finally:
            _core.close_scope()

    def run_with_missing_name(self, args):
        """A global the statements read does not exist (or a closure variable is not set yet):
        they run as written (recorded), reading the module's globals and the function's cells,
        so the NameError comes from the line reading it, after the statements before it ran."""
        if self._plain_reading_outer_names is None:
            self._plain_reading_outer_names = plain_body_reading_outer_names(self.plan, self.spec)
        skip = set(self.outer_inputs)
        return self.run_plain([a for i, a in enumerate(args) if i not in skip], self._plain_reading_outer_names)

    def run_capture(self, args, discard=False):
        """Runs the statements once under the recorder, keeping them as a variant if they qualify.

        With discard=True (ahead-of-time compilation on placeholder arrays) nothing recorded runs.
        """
        own = _core.depth() == 0
        if own:
            _core.open_scope(self.function.site)
        static, subject = True, None
        try:
            cap = _capture.Capture(self, args, strict=discard)
        except _capture.Refusal as e:
            if discard:
                raise
            cap = None
            refusal = (str(e), None)
        try:
            if cap is None:
                result = self.plain(*args)
            else:
                result = self._capture_run(cap, args)
                refusal = cap.refusal
                subject = cap.transient_subject
                static = subject is None
                if refusal is None:
                    try:
                        guards, arrays, spec, effects = cap.finish(result)
                    except _capture.Refusal as e:
                        refusal = (str(e), None)
                if refusal is None:
                    out = _core.fragment_capture_end(self.handle, tuple(args), guards, arrays, spec, effects,
                                                     self.bare)
                    if out is not None:
                        refusal = (out[0], _line_of(out[1], self.short_file))
                        static = False
                else:
                    _core.fragment_capture_abort(self.handle)
        finally:
            if discard:  # placeholders: whatever was recorded must not run
                _core.fragment_discard_trace()
            if own:
                _core.close_scope()
        self.captures += 1
        if refusal is None:
            self.function.captured(self)
        elif discard:
            raise _capture.Refusal(refusal[0])
        else:
            self.function.refused(self, refusal[0], refusal[1], static, subject)
        return self._unpack(result)

    def _capture_run(self, cap, args):
        _core.fragment_capture_begin(self.handle, cap.strict, self.spec.sets_autograd)
        prev = _capture.enter(cap)
        try:
            return self.capture_body(*args)
        except BaseException:
            _core.fragment_capture_abort(self.handle)
            raise
        finally:
            _capture.leave(prev)

    # ------------------------------------------------------------ state

    def disable(self, reason):
        self.disabled_reason = reason
        _core.fragment_set_disabled(self.handle, True)

    def variants(self):
        return _core.fragment_variants(self.handle)

    def info(self, compile_graphs=False):
        return _core.fragment_info(self.handle, compile_graphs)

    def statement_at(self, line):
        """The line of the fragment's top-level statement containing `line`, or None."""
        if line is None:
            return None
        for s in self.spec.stmts:
            if s.lineno <= line <= (getattr(s, "end_lineno", s.lineno) or s.lineno):
                return s.lineno
        return None


def _line_of(where, short_file):
    """'model.py:12' -> 12 when it is in this fragment's file."""
    if not where or ":" not in where:
        return None
    f, _, line = where.rpartition(":")
    try:
        return int(line) if f == short_file else None
    except ValueError:
        return None
