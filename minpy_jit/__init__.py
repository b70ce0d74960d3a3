"""minpy_jit: lazy evaluation and graph caching for imperative MXNet code.

    import mxnet as mx, minpy_jit
    from mxnet import nd
    x = nd.random.uniform(shape=(32, 32))
    with minpy_jit.jit():
        for _ in range(100):
            x = nd.relu(x * 1.01 + 0.5)   # recorded, not run
    print(x)                              # ran as one cached graph at scope exit
    print(minpy_jit.stats())              # ops recorded, flushes by cause, hits/misses...
    print(minpy_jit.last_graph())         # the graph, one line per node

Pipeline (one module per stage): intercept (hooks into MXNet) -> _core.invoke
(records each op into the C++ trace, infers shapes) -> flush (liveness, cache
lookup by structural key) -> lowering to NNVM JSON -> CachedOp executor (cached,
LRU). diagnostics exposes what happened and why.
"""
import os

import mxnet  # noqa: F401  (must be loaded before the extension: it provides libmxnet)

# MXNet's CachedOp merges nodes with the same op, attributes and inputs (common-expression
# elimination), reading this variable each time it builds a graph (when made and at its first run
# on a context). Eagerly every op runs, and in our graphs the merge gave wrong values: two copies
# of one value, one written into an input array, left other outputs computed from swapped inputs
# (fuzz seed 6111096, tests/test_common_expressions.py). It is off for the whole process, users'
# own hybridized blocks included: that costs them only the merge, never a result. Should it change
# later, compile() (cpp/src/executor.cc) sets it back before building a graph.
os.environ["MXNET_ELIMINATE_COMMON_EXPR"] = "0"

# A dist kvstore's server runs its service loop from inside `import mxnet` (kvstore_server.py),
# and imports minpy_jit only when it unpickles a worker's command (server_updates.py): then most
# of mxnet is not loaded yet, and only minpy_jit.server_updates and the extension are needed.
_IN_SERVER_LOOP = not hasattr(mxnet, "kv")
__version__ = "0.1.0"

if not _IN_SERVER_LOOP:
    from . import intercept  # noqa: F401  (installs nothing until a scope opens)
    from . import kernels as _kernels
    from .debug import debug_print
    from .diagnostics import clear_cache, config, events, graphs, last_graph, print_stats, reset_stats, stats, verdict
    from .errors import OpInputError
    from .explain import explain
    from .export import compile_python, to_json, to_python
    from .fragments import Tensor, function
    from .scope import flush, jit

    __all__ = ["jit", "function", "Tensor", "flush", "stats", "reset_stats", "clear_cache", "events", "graphs",
               "last_graph", "config", "print_stats", "verdict", "explain", "debug_print", "to_json", "to_python",
               "compile_python", "OpInputError", "kernels", "kernel_threads"]
    kernels = _kernels.kernels
    kernel_threads = _kernels.threads

    _kernels.load()
