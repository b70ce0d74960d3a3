"""Every recorded op given inputs that do not fit, eagerly and under jit() (on demand, not in CI).

    PYTHONPATH=$PWD python tests/stress/bad_input_sweep.py [legacy|numpy] [--only NAME[,NAME]] [-v]

For each operator the op sweep can call (tests/opcases.py), the inputs it accepts are spoiled one
way at a time: an array given one axis more or one fewer, its last axis one longer (mismatched
broadcast shapes), a first axis of size 0, another dtype (int32, float16, float64), indices out
of range (1000, -1000) or NaN in it; a parameter set out of range (integers -1 and 1000, tuples
of -2 or 1000 or seven 1s, floats -1, each other value of an enumeration). Each case runs eagerly
and then under jit() with arrays made before the call (outside and inside the scope) and one
after, and is classed:

    ok              same outcome: the same values bit for bit, or an error where eager has one
                    (at the call or, at the latest, at the read where eager's raised)
    eager-crash     eager MXNet alone kills the process (MXNet's own bug; jit() not compared)
    eager-varies    eager runs differ: run again, or after disturbing the heap with the inputs
                    made elsewhere (MXNet reads memory it did not write; not compared)
    JIT-CRASH       the process died under jit() where eager did not
    HANG            no answer within the time limit under jit()
    VALUES-FOR-ERROR  a read gave values under jit() where eager's raised
    ERROR-FOR-VALUES  jit() raised where eager gave values
    VALUES-DIFFER   values, dtype or shape differ
    PRIOR-BROKEN    an array made before (or independent of) the op does not read eager's value
    message         both raise, but jit()'s message does not carry eager's check line
    nan-bits        the same numbers, but NaNs with other sign or payload bits

Each op's cases run in one forked child that reports case by case; a child that dies is
restarted after the case it died on, so a crash never ends the sweep. Prints one line per
difference and a table of counts per op; exit status 1 if any difference but `message`.
"""
import argparse
import os
import re
import select
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mxnet as mx  # noqa: E402

import minpy_jit  # noqa: E402
import opcases  # noqa: E402

CASE_TIMEOUT_S = 60
SERIOUS = ("JIT-CRASH", "HANG", "VALUES-FOR-ERROR", "ERROR-FOR-VALUES", "VALUES-DIFFER", "PRIOR-BROKEN")


# ---------------------------------------------------------------------------------------------
# The spoiled cases of one op
# ---------------------------------------------------------------------------------------------

def _like(a, data, dtype=None):
    """An array of a's kind (mx.nd or mx.np) holding data."""
    dtype = dtype or a.dtype
    if isinstance(a, mx.np.ndarray):
        return mx.np.array(data, dtype=dtype)
    return mx.nd.array(data, dtype=dtype)


def _data(shape, dtype, seed):
    rs = np.random.RandomState(seed)
    if np.dtype(dtype).kind == "f":
        return rs.uniform(0.1, 0.9, size=shape).astype(dtype)
    return rs.randint(0, 2, size=shape).astype(dtype)


def array_spoilers(a, k):
    """(label, array) replacing array argument k: other shapes, dtypes and data."""
    shape, dtype = tuple(a.shape), np.dtype(a.dtype)
    out = [("input %d rank+1" % k, _like(a, _data((1,) + shape, dtype, k)))]
    if len(shape) >= 2:
        out.append(("input %d rank-1" % k, _like(a, _data(shape[:-2] + (shape[-2] * shape[-1],), dtype, k))))
    if shape:
        out.append(("input %d last+1" % k, _like(a, _data(shape[:-1] + (shape[-1] + 1,), dtype, k))))
        out.append(("input %d first=0" % k, _like(a, _data((0,) + shape[1:], dtype, k))))
    for other in ("int32", "float16", "float64"):
        if np.dtype(other) != dtype:
            out.append(("input %d %s" % (k, other), _like(a, _data(shape, other, k), other)))
    out.append(("input %d index 1000" % k, _like(a, np.full(shape, 1000), dtype)))
    out.append(("input %d index -1000" % k, _like(a, np.full(shape, -1000), dtype)))
    if dtype.kind == "f":
        out.append(("input %d nan" % k, _like(a, np.full(shape, np.nan), dtype)))
    return out


def _param_values(op, name, current):
    """Values of parameter `name` that are likely out of range for it."""
    t = op.types.get(name, "")
    if t.startswith("{"):
        return [v for v in op.choices.get(name, []) if str(v) != str(current)]
    if t.startswith(("int", "long", "index_t", ", int")) or t.startswith("int or None"):
        return [-1, 1000]
    if "tuple" in t.lower() or t.startswith("Shape"):
        n = len(current) if isinstance(current, (tuple, list)) and current else 1
        return [(-2,) * n, (1000,) * n, (1,) * 7]
    if t.startswith(("float", "double", "real_t")):
        return [-1.0]
    return []


def param_spoilers(op, params):
    """(label, params) with one parameter set out of range (the key variable excepted)."""
    out = []
    for name in op.params:
        if name == op.key_var or name in ("ctx", "dtype", "out_type", "stype", "name"):
            continue
        if name not in op.types or ("NDArray" in op.types[name] or "Symbol" in op.types[name]):
            continue
        for v in _param_values(op, name, params.get(name)):
            out.append(("%s=%s" % (name, v), dict(params, **{name: v})))
    return out


def cases(op, arrays, params):
    """Every spoiled case of the op: (label, arrays, params), in a fixed order."""
    out = []
    for k, a in enumerate(arrays):
        if a.stype != "default":
            continue
        for label, bad in array_spoilers(a, k):
            trial = list(arrays)
            trial[k] = bad
            out.append((label, trial, params))
    for label, p in param_spoilers(op, params):
        out.append((label, list(arrays), p))
    return out


# ---------------------------------------------------------------------------------------------
# One case: eager, then jit()
# ---------------------------------------------------------------------------------------------

ERRORS = (mx.MXNetError, ValueError, IndexError, TypeError, RuntimeError)


def _read(a):
    """('v', dtype, shape, bytes) or ('e', message) for one array read as user code reads it."""
    try:
        if a.stype != "default":
            a = a.tostype("default")
        v = a.asnumpy()
        return ("v", str(v.dtype), v.shape, v.tobytes())
    except ERRORS as e:
        return ("e", "%s: %s" % (type(e).__name__, e))


def _clear_errors():
    try:
        mx.nd.waitall()  # an error nobody read would fail unrelated later ops (README, Errors)
    except ERRORS:
        pass


def _fresh(a):
    """A copy the call may update in place (a zero-size array as it is: under legacy shape
    semantics MXNet cannot copy one, and there is nothing to update)."""
    return a if 0 in a.shape else a.copy()


def _fresh_elsewhere(a):
    """The same data in an array made another way (copied from host memory rather than by an
    engine copy), so that it lands elsewhere in the heap."""
    if 0 in a.shape:
        return a
    return _like(a, a.asnumpy(), a.dtype)


def _disturb_heap(k):
    """Leaves freed blocks of other contents and sizes behind, and MXNet's temporary workspace
    holding other data: memory an op reads without writing it (a result a failed or skipped
    kernel never wrote, an index out of bounds) then reads otherwise."""
    keep = [mx.nd.full((n,), 777.0 + k) for n in (2, 3, 4, 6, 8, 16, 32)[:k + 1]]
    keep.append(mx.nd.sort(mx.nd.array(np.random.RandomState(k).uniform(size=(50000,)))))
    keep.append(mx.nd.softmax(mx.nd.full((4096,), 3.0 + k)))
    mx.nd.waitall()
    del keep
    mx.nd.waitall()


def eager_varies(op, arrays, params, first):
    """Whether eager MXNet gives other reads than `first` in the same process: run again as is,
    then after disturbing the heap with inputs made elsewhere (twice). Eager code that reads memory
    it never wrote gives whatever the allocator handed it (in a fresh process mostly zeros, so two
    plain runs often agree): no reference to compare jit() with (tests/stress/repros/README.md)."""
    if run_eager(op, arrays, params) != first:
        return True
    for k in (1, 3):
        _disturb_heap(k)
        if run_eager(op, arrays, params, make=_fresh_elsewhere) != first:
            return True
    return False


def run_eager(op, arrays, params, make=None):
    """('call', message) if the call raises, else ('reads', [read per result], [read per input])."""
    ins = [(make or _fresh)(a) for a in arrays]
    mx.random.seed(7)
    try:
        outs = opcases.invoke(op, ins, params)
    except ERRORS as e:
        _clear_errors()
        return ("call", "%s: %s" % (type(e).__name__, e))
    reads = [_read(o) for o in outs]
    inputs = [_read(a) for a in ins]
    _clear_errors()
    return ("reads", reads, inputs)


def run_jit(op, arrays, params, site):
    """The same under jit(), with arrays made before and after the call: (outcome, prior reads).
    Each case is its own jit() site: one site compiling a graph per case would reach the
    recompile limit and run eagerly from then on."""
    make = (lambda x: mx.np.array(x)) if op.numpy else (lambda x: mx.nd.array(x))
    before = make(np.array([1.0, 2.0, 3.0], np.float32))
    ins = [_fresh(a) for a in arrays]
    mx.random.seed(7)
    outcome, outs = None, None
    exit_error = None
    try:
        with minpy_jit.jit(site=site):
            inside = before * 2
            try:
                outs = opcases.invoke(op, ins, params)
            except ERRORS as e:
                outcome = ("call", "%s: %s" % (type(e).__name__, e))
            after = before + 1
    except ERRORS as e:  # a flush at the scope's exit raised
        exit_error = "%s: %s" % (type(e).__name__, e)
    if outcome is None and outs is not None:
        outcome = ("reads", [_read(o) for o in outs], [_read(a) for a in ins])
    elif outcome is None:
        outcome = ("call", "(no result) " + str(exit_error))
    prior = [_read(before), _read(inside), _read(after)]
    _clear_errors()
    return outcome, prior, exit_error


def _check_line(msg):
    """The line of an MXNet error that says what is wrong (the last 'MXNetError: ' line, else the
    first line), without the error class and MXNet's source position."""
    lines = [x.strip() for x in msg.splitlines() if x.strip()]
    core = [x for x in lines if x.startswith("MXNetError: ") and "Traceback" not in x]
    line = core[-1] if core else lines[0] if lines else ""
    for _ in range(3):  # "MXNetError: MXNetError: ..." (the class, then MXNet's own prefix)
        for prefix in ("MXNetError: ", "IndexError: ", "ValueError: ", "TypeError: ", "RuntimeError: "):
            if line.startswith(prefix):
                line = line[len(prefix):]
    if line.startswith("[") and "] " in line[:12]:
        rest = line[line.index("] ") + 2:]
        colon = rest.find(": ")
        if colon > 0 and " " not in rest[:colon]:
            line = rest[colon + 2:]
    return line.strip()


def _as_mxnet_wrote_it(line):
    """MXNet's Python error parser rewrites its C++ message: '::' becomes ': :', and a word
    followed by a colon inside the text ("Check failed: a == b : Pooling: Input ...") is moved
    to the front as if it were an error type ("Pooling: Check failed: a == b : Input ...").
    minpy_jit quotes the C++ text: undo both before comparing."""
    line = line.replace(": :", "::")
    m = re.match(r"^(\w+): (Check failed: .*?): (.*)$", line)
    if m and m.group(1) != "Check":
        line = "%s: %s: %s" % (m.group(2), m.group(1), m.group(3))
    return line


def _same_meaning(eager_msg, jit_msg):
    line = _check_line(eager_msg)
    if line.startswith("Traceback") or not line:  # the check is the last line (see _as_mxnet_wrote_it)
        lines = [x.strip() for x in eager_msg.splitlines() if x.strip()]
        line = lines[-1] if lines else ""
    line = _as_mxnet_wrote_it(line).rstrip(".:")
    return not line or line[:80] in jit_msg


def classify(eager, jit_outcome, prior, exit_error):
    """(class, detail) of one case."""
    want_prior = [("v", "float32", (3,), np.array(v, np.float32).tobytes())
                  for v in ([1, 2, 3], [2, 4, 6], [2, 3, 4])]
    broken = [n for n, got, want in zip(("before", "inside", "after"), prior, want_prior) if got != want]
    if broken:
        return "PRIOR-BROKEN", "%s read %s" % (broken, [
            str(p[1])[-160:] if p[0] == "e" else np.frombuffer(p[3], p[1]).tolist() if p[1] != "None" else p
            for p, w in zip(prior, want_prior) if p != w])
    if eager[0] == "call":
        if jit_outcome[0] == "call":
            return ("ok", "") if _same_meaning(eager[1], jit_outcome[1]) else \
                ("message", "eager: %s | jit: %s" % (_check_line(eager[1])[:150], jit_outcome[1][-200:]))
        # recorded: every read must raise (the first at the latest) with eager's meaning
        reads = jit_outcome[1]
        if reads and reads[0][0] == "e":
            return ("ok", "") if _same_meaning(eager[1], reads[0][1]) else \
                ("message", "eager: %s | jit (read): %s" % (_check_line(eager[1])[:150], reads[0][1][-200:]))
        return "VALUES-FOR-ERROR", "eager raised at the call: %s" % _check_line(eager[1])[:200]
    want_reads, want_inputs = eager[1], eager[2]
    if jit_outcome[0] == "call":
        return "ERROR-FOR-VALUES", "jit raised at the call: %s" % jit_outcome[1][-300:]
    got_reads, got_inputs = jit_outcome[1], jit_outcome[2]
    if len(got_reads) != len(want_reads):
        return "VALUES-DIFFER", "%d results, eager %d" % (len(got_reads), len(want_reads))
    for what, got_list, want_list in (("result", got_reads, want_reads), ("input", got_inputs, want_inputs)):
        for k, (got, want) in enumerate(zip(got_list, want_list)):
            if got == want:
                continue
            if want[0] == "e" and got[0] == "e":
                if not _same_meaning(want[1], got[1]):
                    return "message", "%s %d eager: %s | jit: %s" % (what, k, _check_line(want[1])[:150],
                                                                   got[1][-200:])
                continue
            if want[0] == "e":
                return "VALUES-FOR-ERROR", "%s %d read values; eager raised %s" % (what, k, _check_line(want[1])[:200])
            if got[0] == "e":
                return "ERROR-FOR-VALUES", "%s %d raised %s" % (what, k, got[1][-300:])
            if got[1:3] == want[1:3] and got[1] != "None" and np.dtype(got[1]).kind in "fc":
                g, w = np.frombuffer(got[3], got[1]), np.frombuffer(want[3], want[1])
                if np.array_equal(g, w, equal_nan=True):  # only NaN payloads or signs differ
                    return "nan-bits", "%s %d: the same numbers, NaNs of other bits" % (what, k)
                bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
                return "VALUES-DIFFER", "%s %d: %d of %d elements differ, first at %d: jit %r eager %r" % (
                    what, k, bad.sum(), g.size, np.argmax(bad), g[np.argmax(bad)], w[np.argmax(bad)])
            return "VALUES-DIFFER", "%s %d: jit %s %s, eager %s %s" % (what, k, got[1], got[2], want[1], want[2])
    return "ok", ""


# ---------------------------------------------------------------------------------------------
# Children: one per op, restarted after a case that killed it
# ---------------------------------------------------------------------------------------------

def _child(op, op_cases, start, w):
    def say(line):
        os.write(w, (line.replace("\n", " ") + "\n").encode())
    for k in range(start, len(op_cases)):
        label, arrays, params = op_cases[k]
        say("EAGER %d" % k)
        eager = run_eager(op, arrays, params)
        if eager_varies(op, arrays, params, eager):  # uninitialised memory, a race: no reference
            say("CASE %d eager-varies values eager gives other values when run again (README: eager-varies)" % k)
            continue
        say("JIT %d" % k)
        outcome, prior, exit_error = run_jit(op, arrays, params, "%s case %d" % (op.name, k))
        cls, detail = classify(eager, outcome, prior, exit_error)
        say("CASE %d %s %s %s" % (k, cls, "raises" if eager[0] == "call" or any(
            r[0] == "e" for r in eager[1]) else "values", detail))
    say("DONE")


def run_op(op, arrays, params):
    """[(case index, class, eager raises?, detail)] for every case of the op."""
    op_cases = cases(op, arrays, params)
    results, start = [], 0
    while start < len(op_cases):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 0
            try:
                _child(op, op_cases, start, w)
            except BaseException as e:  # noqa: BLE001 - reported by the parent as a crash of the case
                os.write(w, ("FAILED %s: %s\n" % (type(e).__name__, str(e).replace("\n", " ")[:300])).encode())
                code = 3
            os._exit(code)
        os.close(w)
        phase, current, buf, done = None, start, b"", False
        deadline = time.time() + CASE_TIMEOUT_S
        killed = False
        while True:
            ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.time()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
            data = os.read(r, 65536)
            if not data:
                break
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line = line.decode(errors="replace")
                deadline = time.time() + CASE_TIMEOUT_S
                word = line.split(" ", 1)[0]
                if word in ("EAGER", "JIT"):
                    phase, current = word, int(line.split()[1])
                elif word == "CASE":
                    _, k, cls, raises, detail = (line.split(" ", 4) + [""])[:5]
                    results.append((int(k), cls, raises == "raises", detail))
                    phase = None
                elif word == "DONE":
                    done = True
                elif word == "FAILED":
                    results.append((current, "JIT-CRASH" if phase == "JIT" else "eager-crash", False,
                                    "the sweep raised: " + line))
                    phase = None
        os.close(r)
        _, status = os.waitpid(pid, 0)
        if done:
            break
        if phase is not None:  # died (or hung) inside a case
            if killed:
                cls = "HANG" if phase == "JIT" else "eager-crash"
            else:
                cls = "JIT-CRASH" if phase == "JIT" else "eager-crash"
            sig = -1 if os.WIFEXITED(status) is False and not os.WIFSIGNALED(status) else \
                (os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
            results.append((current, cls, phase == "JIT", "signal/status %s" % sig))
        start = current + 1
    return op_cases, results


def sweep(numpy_ops, only, verbose):
    found = opcases.discover(numpy_ops)
    names = sorted(found) if not only else [n for n in sorted(found) if n in only]
    per_op = {}
    for name in names:
        op, arrays, params = found[name]
        op_cases, results = run_op(op, arrays, params)
        counts = {}
        for k, cls, raises, detail in results:
            counts[cls] = counts.get(cls, 0) + 1
            counts["eager raises"] = counts.get("eager raises", 0) + (1 if raises else 0)
            if cls != "ok" and (cls in SERIOUS or verbose or cls == "eager-crash"):
                print("%-6s %-32s %-28s %s" % (cls if cls != "ok" else "", name, op_cases[k][0], detail[:400]),
                      flush=True)
        counts["cases"] = len(op_cases)
        per_op[name] = counts
    return per_op


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="*", default=["legacy", "numpy"])
    ap.add_argument("--only", default="")
    ap.add_argument("-v", action="store_true", help="print `message` differences too")
    args = ap.parse_args()
    only = set(x for x in args.only.split(",") if x)
    table = {}
    for numpy_ops in [False] * ("legacy" in args.which) + [True] * ("numpy" in args.which):
        if numpy_ops:
            mx.util.np_array(True).__enter__()
            mx.util.np_shape(True).__enter__()
        table.update(sweep(numpy_ops, only, args.v))
    classes = ["cases", "eager raises", "ok", "message", "nan-bits", "eager-crash", "eager-varies"] + list(SERIOUS)
    print("\n%-34s " % "op" + " ".join("%8s" % c[:8] for c in classes))
    totals = {c: 0 for c in classes}
    for name, counts in sorted(table.items()):
        for c in classes:
            totals[c] += counts.get(c, 0)
        if True:  # every op: its counts are the sweep's report
            print("%-34s " % name + " ".join("%8d" % counts.get(c, 0) for c in classes))
    print("%-34s " % ("TOTAL (%d ops)" % len(table)) + " ".join("%8d" % totals[c] for c in classes))
    sys.exit(1 if any(totals[c] for c in SERIOUS) else 0)


if __name__ == "__main__":
    main()
