"""What the runtime did and why: statistics, flush events, graphs, logging."""
import json
import os
import sys

from . import _core


def stats():
    """Counters as a plain dict (prints, compares and serialises as JSON).

    ops_recorded, flushes {cause: n}, cache_hits, cache_misses, cache_evictions,
    graphs_cached, compile_ms, executions (background_launches of them handed to MXNet by the
    launcher thread), eager_replays, fallbacks {op: n},
    fallback_reasons {"op: why": n}, shape_inferences, fused_kernels (calls of our own
    kernels run), fused_ops (the recorded ops those calls stood for), sites {site: {compiles, eager}},
    kvstore {calls {push, pull, pushpull, init, broadcast, barrier: n}, arrays_pushed, arrays_pulled,
    flushes (kvstore calls that found recorded work pending and ran it first; their causes in
    flushes read "kvstore push", ...)}: the kvstore C API calls made inside jit() scopes,
    clean (True only if nothing ran eagerly: no fallback, no eager replay, no site past its
    recompile limit; verdict() says what did).
    """
    return _core.stats()


def reset_stats():
    _core.reset_stats()


def clear_cache():
    """Drops every compiled graph and each jit() site's compile counts, so a site that hit the
    recompile limit (and runs eagerly) compiles again. Statistics are kept (see reset_stats)."""
    _core.clear_cache()


def events():
    """The most recent flushes (up to 256): cause, user line, ops, hit/miss and why it missed."""
    return _core.events()


def graphs():
    """Cached graphs, most recently used first: key, printable IR, symbol JSON, runs."""
    return _core.graphs()


def last_graph():
    """The readable printout of the most recently used compiled graph."""
    g = _core.graphs()
    return g[0]["ir"] if g else ""


def config(**options):
    """Set options; with no arguments return them all.

    max_ops: flush when a trace reaches this many ops (default 10000)
    segment_ops: a longer trace is started in segments of about this many ops, so MXNet runs
          one while Python records the next (default 64; 0 turns it off). Cuts fall where the
          op that ended the last segment comes round again, so a loop's segments repeat and
          hit the cache.
    async_launch: a segment cut mid-scope that hits the cache, is not recorded under autograd
          or numpy shape semantics and hands MXNet at least 128 arrays is launched by a
          background thread while Python records on (default True); every other path to MXNet
          waits for such launches first
    cache_size: compiled executors kept, LRU (default 256)
    recompile_limit: distinct graphs a jit() site may compile for the same flush (its first,
          second, ... segment) before it runs eagerly (default 8)
    track_source: remember the user line of every recorded op (default True)
    log: "recompiles", "flushes", "all" or "" -- same as MINPY_JIT_LOG
    direct_updates: a Trainer update with nothing recorded before it is pushed to MXNet's
          engine as one operation running our kernel, not recorded as a graph (default
          True; False records it, for comparison: the same results, bit for bit)
    direct_kernels: a graph made only of our fused kernels runs as one engine operation
          calling them (on the calling thread when nothing is pending on its arrays)
          instead of through MXNet's CachedOp (default True; False: the CachedOp, the same
          bits). Not under autograd recording. stats()['kernels_launched_directly'] counts them
    batch_projections: FullyConnected calls of one weight and bias on data made before the
          first of them (a recurrent cell's input projections) run as one call over all their
          rows, where MXNet's kernel gives every row the same bits either way (checked once per
          shape; default True, with fuse; graphs()' 'batched_projections' counts them). Applies
          to graphs compiled after the change (clear_cache() to rebuild)
    fc_kernels: FullyConnected on float32 2-D data in graphs MXNet's autograd does not record
          (a step whose backward() is in the graph included) runs, forward and backward, in our
          kernels on every core, where they give MXNet's bits: each shape is checked once per
          process against MXNet's operator on random data (default True, with fuse; graphs()'
          'fc_kernels' counts them; changing it empties the cache)
    stable_params: inputs of a compiled graph that are the same arrays run after run (weights,
          a fixed batch) are bound as parameters of the graph, as a hybridized block binds its
          weights, so MXNet sets up the operators reading them once (default True; MXNet
          checks the arrays at every run and binds again when they changed; a graph whose
          parameters keep changing gives it up; False: every input passed per run)
    reads_keep_recorded: a read (asnumpy, wait_to_read, waitall) of a pure recorded forward
          before its backward() runs a copy of it without autograd and keeps the trace open, so
          the backward still sees the whole forward, fused (default True; False flushes it,
          each op then its own autograd node)
    fuse: run elementwise chains and optimizer updates in our own kernels (default True;
          False gives MXNet's kernels everywhere, bit for bit; changing it empties the cache)
    """
    if "log" in options:
        set_log(options.pop("log"))
    if options:
        _core.configure(options)
    return _core.config()


def set_log(spec):
    parts = {p.strip() for p in (spec or "").split(",") if p.strip()}
    if "all" in parts:
        parts |= {"recompiles", "flushes"}
    _core.configure({"log_recompiles": "recompiles" in parts, "log_flushes": "flushes" in parts})


def _log(line):
    print(line, file=sys.stderr)


def verdict(s=None):
    """One line: did everything recorded run in compiled graphs, and if not, what ran eagerly."""
    s = stats() if s is None else s
    if s["clean"]:
        return "minpy_jit: clean: every recorded op ran in a compiled graph"
    parts = []
    if s["fallbacks"]:
        parts.append("%d ops ran eagerly (%s)" % (sum(s["fallbacks"].values()), ", ".join(
            "%s x%d" % kv for kv in sorted(s["fallback_reasons"].items(), key=lambda kv: -kv[1]))))
    if s["eager_replays"]:
        parts.append("%d flushes were replayed op by op (see events())" % s["eager_replays"])
    eager_sites = sorted(site for site, info in s["sites"].items() if info["eager"])
    if eager_sites:
        parts.append("sites running eagerly after the recompile limit: %s" % ", ".join(eager_sites))
    return "minpy_jit: NOT clean: " + "; ".join(parts)


def print_stats(file=None):
    s = stats()
    out = file or sys.stdout
    print(verdict(s), file=out)
    print(json.dumps(s, indent=2, sort_keys=True), file=out)


def _cell_name(filename):
    """A notebook cell's name ("In[4]") for the file name IPython compiled it under, or None."""
    if filename.startswith("<ipython-input-"):  # older IPython: <ipython-input-4-1f2e3d...>
        return "In[%s]" % filename.split("-")[2]
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if hasattr(ipython, "get_ipython") else None
    number = getattr(getattr(shell, "compile", None), "_filename_map", {}).get(filename)
    return None if number is None else "In[%d]" % number


_core.set_log(_log)
_core.set_cell_namer(_cell_name)
set_log(os.environ.get("MINPY_JIT_LOG", ""))
