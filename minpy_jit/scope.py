"""The `jit()` scope: where recording starts and where it must end."""
import contextlib

from . import _core, intercept  # noqa: F401  (intercept hands the hooks to _core when imported)


_disabled = _core.jit_disabled  # the same test as jit()'s (scope.cc), for @function


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

    # Each one C call (cpp/src/scope.cc): a KeyboardInterrupt lands before or after them, never
    # between installing MXNet's hooks and opening the scope, or between the flush at the end
    # and removing the hooks. __enter__ reads self._site (None: file:line of the `with`, or of
    # the decorated function's caller) and MINPY_JIT; __exit__ flushes, also when the block raised.
    __enter__ = _core.scope_enter
    __exit__ = _core.scope_exit


def flush():
    """Run everything recorded so far (on every thread) now."""
    _core.flush("explicit flush")
