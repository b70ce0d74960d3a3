"""The `jit()` scope: where recording starts and where it must end."""
import contextlib
import os
import sys

from . import _core, intercept


def _disabled():
    return os.environ.get("MINPY_JIT", "1").strip().lower() in ("0", "false", "off", "no")


class jit(contextlib.ContextDecorator):
    """Record MXNet ops lazily inside the block; run them as cached compiled graphs.

        with minpy_jit.jit():
            for _ in range(100):
                x = nd.relu(x * 1.01 + 0.5)
        print(x)   # same values as without jit()

    Also a decorator (`@minpy_jit.jit()`). Nested scopes act as one: the work is
    flushed when the outermost scope exits. Each scope is a *site* (file:line where
    it was entered); a site that keeps compiling new graphs past the recompile
    limit runs eagerly from then on, with a warning. `MINPY_JIT=0` makes the
    scope a no-op.
    """

    def __init__(self, site=None):
        self._site = site  # the name recompile limits and statistics use; default: file:line of the `with`
        self._entered = []

    def __enter__(self):
        if _disabled():
            self._entered.append(False)
            return self
        site = self._site
        if site is None:
            frame = sys._getframe(1)
            if frame.f_code.co_filename == contextlib.__file__:  # used as a decorator
                frame = frame.f_back
            site = "%s:%d" % (os.path.basename(frame.f_code.co_filename), frame.f_lineno)
        intercept.acquire()
        _core.enter(site)
        self._entered.append(True)
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._entered.pop():
            return False
        try:
            _core.exit()  # flushes what was recorded, also when the block raised
        finally:
            intercept.release()
        return False


def flush():
    """Run everything recorded so far (on every thread) now."""
    _core.flush("explicit flush")
