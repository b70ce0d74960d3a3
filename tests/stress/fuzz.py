"""Differential fuzzer: random MXNet programs run eagerly and under jit(), compared exactly.

    PYTHONPATH=. .venv/bin/python tests/stress/fuzz.py --programs 100000 --shard 0/2 \\
        --progress tests/stress/out/fuzz-0of2.json
    PYTHONPATH=. .venv/bin/python tests/stress/fuzz.py --programs 100 --show 17   # print program 17
    PYTHONPATH=. .venv/bin/python tests/stress/fuzz.py --check 17                  # run one seed
    PYTHONPATH=. .venv/bin/python tests/stress/fuzz.py --eager-only 17    # eagerly, minpy_jit never imported

Each program comes from a seed (fuzz_gen.py: every recorded op family, in-place writes, views,
autograd, Gluon blocks and Trainers, random ops, optimizer updates, fused chains, scalars that
change between loop iterations, exceptions inside the block, run-time failures, CustomOp and
kvstore callbacks, reads mid-block, nested scopes, explicit flushes, segment sizes). The eager
and the jitted run must observe the same values, shapes, dtypes, contexts, gradients and raised
exception types (fuzz_harness.py); floats bit for bit, fused or not, gradients and optimizer
updates included (fuzz_gen.Program.exact).

Programs of shard i/n are seeds start+i, start+i+n, ...; the runner is resumable: the progress
file records the next program, the counts and every mismatch, and is rewritten as it goes; --until
HH:MM (UTC) stops between two programs at that time, so the counts are exactly what ran. Programs
run in a worker process: a crash or a hang (--timeout) is a finding too; the worker is restarted
after it. Every mismatch is shrunk (statements dropped, compounds unwrapped while the same kind of
mismatch persists) and written as a standalone reproducer script in --out (it contains the
harness, so it needs only mxnet, numpy and minpy_jit); reproducers are checked in a fresh process.
Prints programs run, mismatches and the reproducers. Not collected by pytest (no test_ prefix).

A mismatch that agrees standalone may need the programs its worker ran before it (every program's
`with J():` is in the same file, so a site's jit() state carries over, as in a long-running loop).
--history replays SEED after them in one process, minimises them (suffixes, then bisection; each trial
a fresh subprocess) and writes DIR/history_seedSEED.py, which runs the few that matter, then SEED
(fuzz_history.py). Give the run's --shard, --start, --restart-every and its crashes/hangs:

    PYTHONPATH=. .venv/bin/python tests/stress/fuzz.py --history 607462 --start 600000 \\
        --restarts 605806,619127 --out /tmp/hist      # or --progress its fuzz.json for the restarts
"""
import argparse
import collections
import json
import linecache
import os
import select
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fuzz_gen  # noqa: E402
import fuzz_history  # noqa: E402

HARNESS_FILE = os.path.join(HERE, "fuzz_harness.py")
# Families whose mismatches belong to other work of issue 10 (items 1-4); tallied apart.
KNOWN_AREAS = {"runtime_fail": "item 1 (run-time op failure)", "custom": "item 2 (C callbacks)",
               "kvstore": "item 2 (C callbacks)", "pinned": "item 2 (cpu_pinned)",
               "allclose": "item 3 (late-typed 0-d results)", "sparse": "item 4 (sparse)",
               "linalg_add": "MXNet's linalg backward into a grad_req='add' gradient (la_op.h)"}


# ------------------------------------------------------------------ running one program

_harness = None


def harness():
    global _harness
    if _harness is None:
        import fuzz_harness
        _harness = fuzz_harness
    return _harness


def compile_program(prog, filename="fuzzprog.py"):
    """The program's function, defined in the harness namespace (where a reproducer defines it)."""
    src = prog.source()
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = dict(vars(harness()))
    exec(compile(src, filename, "exec"), ns)
    return ns["program"]


def kind_of(diff):
    """The kind of a difference, kept while shrinking: an exception, or a value/metadata."""
    if diff is None:
        return None
    if "raised" in diff or "left the scope" in diff or "program raised" in diff:
        return "exception"
    if "bit-exact required" in diff:
        return "inexact"
    return "value"


def _mentions_name_error(obs):
    return "NameError" in repr(obs) or "UnboundLocalError" in repr(obs)


def check(prog):
    """(difference or None, eager observations) of one program."""
    h = harness()
    fn = compile_program(prog)
    eager, jitted = h.run_both(fn, prog.seed, prog.config)
    return h.first_difference(eager, jitted, prog.exact), eager


# ------------------------------------------------------------------ shrinking

def _paths(stmts, prefix=()):
    """Every statement position in a statement tree, parents before children."""
    for i, s in enumerate(stmts):
        yield prefix + (i,)
        if s.children:
            yield from _paths(s.children, prefix + (i, "c"))


def _locate(prog, part, path):
    lst = prog.prelude if part == "prelude" else prog.body
    for j in range(0, len(path) - 1, 2):
        lst = lst[path[j]].children
    return lst, path[-1]


def _candidates(prog):
    """Smaller programs: chunks of top-level statements removed, single statements removed,
    compounds replaced by their children, loops run fewer times, the configuration reset."""
    for part in ("body", "prelude"):
        lst = getattr(prog, part)
        n = len(lst)
        size = n // 2
        while size >= 2:
            for start in range(0, n, size):
                c = prog.copy()
                del getattr(c, part)[start:start + size]
                yield c
            size //= 2
        for path in reversed(list(_paths(lst))):
            c = prog.copy()
            l2, i = _locate(c, part, path)
            del l2[i]
            yield c
            c = prog.copy()
            l2, i = _locate(c, part, path)
            s = l2[i]
            if s.children is not None:
                l2[i:i + 1] = s.children
                yield c
            elif s.text.startswith("try:\n") and "\nexcept Exception as e:" in s.text:
                c = prog.copy()
                l2, i = _locate(c, part, path)
                inner = s.text[len("try:\n"):s.text.index("\nexcept Exception as e:")]
                l2[i] = fuzz_gen.Stmt("\n".join(ln[4:] for ln in inner.split("\n")), s.family)
                yield c
    for path in _paths(prog.body):
        l2, i = _locate(prog, "body", path)
        if l2[i].text.startswith("for it in range(") and l2[i].text != "for it in range(2):":
            c = prog.copy()
            l3, j = _locate(c, "body", path)
            l3[j].text = "for it in range(2):"
            yield c
    default = {"fuse": True, "segment_ops": 64, "async_launch": True, "max_ops": 10000}
    for k, v in default.items():
        if prog.config.get(k) != v:
            c = prog.copy()
            c.config[k] = v
            yield c


def shrink(prog, kind, budget_s=300.0, still_fails=None):
    """The smallest program found (greedy, to a fixed point) whose difference is of the same kind."""
    if still_fails is None:
        def still_fails(c):
            try:
                d, eager = check(c)
            except Exception:  # noqa: BLE001 - a harness failure is not the mismatch being shrunk
                return False
            return kind_of(d) == kind and not _mentions_name_error(eager)
    deadline = time.time() + budget_s
    improved = True
    while improved and time.time() < deadline:
        improved = False
        for c in _candidates(prog):
            if time.time() > deadline:
                break
            if (c.size() < prog.size() or c.config != prog.config or c.source() != prog.source()) and \
                    len(c.source()) <= len(prog.source()) and still_fails(c):
                prog, improved = c, True
                break
    return prog


# ------------------------------------------------------------------ reproducers

def reproducer_text(prog, diff, original_size):
    with open(HARNESS_FILE) as f:
        harness_src = f.read()
    head = ('"""minpy_jit fuzz reproducer: seed %d, shrunk from %d to %d statements.\n\n'
            'First difference (eager vs jit()): %s\n\n'
            '    PYTHONPATH=<minpy_jit checkout> python %%s    # exits 1 while jit() and eager differ\n'
            '"""\n' % (prog.seed, original_size, prog.size(), diff.replace("\\", "\\\\").replace('"""', "'''")))
    tail = ("\n\n# ---------------------------------------------------------------- the program\n\n%s\n\n"
            "if __name__ == '__main__':\n"
            "    difference = compare_runs(program, %d, exact=%r, config=%r)\n"
            "    print(difference or 'eager and jit() agree')\n"
            "    raise SystemExit(1 if difference else 0)\n" % (prog.source(), prog.seed, prog.exact, prog.config))
    body = harness_src.split('"""', 2)[2]  # the harness without its own docstring
    return head + "# ---------------------------------------------------------------- harness (tests/stress/fuzz_harness.py)" + body + tail


def standalone_reproduces(path, timeout=300):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(HERE)) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        p = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "hang"
    if p.returncode == 1:
        return "yes"
    if p.returncode == 0:
        return "no"
    return "exit %d: %s" % (p.returncode, (p.stderr or "").strip().splitlines()[-1:] or "")


# ------------------------------------------------------------------ the worker

def worker(args):
    """Runs programs k in [from, to) of the shard; one JSON line per event on stdout."""
    import mxnet as mx  # noqa: F401
    import minpy_jit
    h = harness()
    out = sys.stdout
    sys.stdout = sys.stderr  # programs and MXNet print; the protocol keeps stdout
    i, n = args.shard
    known_counts = collections.Counter()
    signatures = collections.Counter()
    for k in range(args.from_k, args.to_k):
        seed = args.start + i + k * n
        out.write(json.dumps({"event": "start", "k": k, "seed": seed}) + "\n")
        out.flush()
        rec = {"event": "done", "k": k, "seed": seed}
        try:
            prog = fuzz_gen.generate(seed)
            rec["families"] = sorted(prog.families())
            rec["exact"] = prog.exact
            diff, eager = check(prog)
            rec["eager_raised"] = _eager_exceptions(eager)
            if diff is not None and not eager_deterministic(prog, eager):
                diff = None  # MXNet itself gives another result each time: not jit()'s doing
                rec["flaky"] = True
            if diff is not None and differs_only_with_few_workspaces(seed):
                rec["mismatch"], rec["kind"], rec["known_area"] = diff, kind_of(diff), SHARED_WORKSPACE
                known_counts[SHARED_WORKSPACE] += 1
                diff = None
            if diff is not None:
                rec.update(_handle_mismatch(args, prog, diff, known_counts, signatures))
        except Exception:  # noqa: BLE001 - a harness error is reported, not fatal
            rec["harness_error"] = traceback.format_exc()[-2000:]
        out.write(json.dumps(rec) + "\n")
        out.flush()
    st = minpy_jit.stats()
    out.write(json.dumps({"event": "stats", "stats": {k: st[k] for k in (
        "ops_recorded", "flushes", "cache_hits", "cache_misses", "cache_evictions", "executions", "eager_replays",
        "background_launches", "fallbacks", "fused_kernels")}}) + "\n")
    out.flush()


def eager_only(seed):
    """--eager-only: SEED's eager run alone, in this process, with minpy_jit never imported (a
    stand-in module answers the harness's `import minpy_jit`): a crash here is MXNet's own."""
    import types
    assert "minpy_jit" not in sys.modules, "--eager-only must run before anything imports minpy_jit"
    stand_in = types.ModuleType("minpy_jit")
    stand_in.OpInputError = type("OpInputError", (Exception,), {})  # X() asks; nothing raises it
    sys.modules["minpy_jit"] = stand_in
    prog = fuzz_gen.generate(seed)
    eager = harness().run(compile_program(prog), prog.seed, use_jit=False)
    print("eager run ended (minpy_jit's extension loaded: %s); eager exceptions: %s"
          % ("minpy_jit._core" in sys.modules, _eager_exceptions(eager)))


def _eager_exceptions(eager):
    """Exception types the eager run raised (programs should mostly not raise)."""
    names = []

    def walk(x):
        if isinstance(x, tuple) and len(x) >= 2 and isinstance(x[-2], str) and x[-2] == "raised" \
                and isinstance(x[-1], str):
            names.append(x[-1])
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
    walk(eager[0])
    return names


def eager_deterministic(prog, eager):
    """Whether a second eager run observes exactly what the first did. The memory pool is
    scribbled on between the two, so a read of memory no op wrote (the output of an op that
    failed at run time, after waitall() cleared its error) shows as a difference."""
    h = harness()
    scribble_on_memory_pool()
    again = h.run(compile_program(prog), prog.seed, use_jit=False)
    return h.first_difference(eager, again, exact=True) is None


def scribble_on_memory_pool(value=-7.25e19):
    """Fills chunks of every size the programs allocate and hands them back to MXNet's pool."""
    from mxnet import nd
    sizes = list(range(1, 1025)) + [2 ** k for k in range(11, 20)]
    chunks = [nd.full((n,), value, dtype=dt) for n in sizes for dt in ("float32", "float16")]
    nd.waitall()
    del chunks
    nd.waitall()


# An op that fails at run time leaves its error on the MXNet temp workspace copy it drew, so a later
# op drawing the same copy fails too and its output is never written: which ops that hits
# depends on which ops draw a workspace, and our graphs draw it differently from eager's ops.
SHARED_WORKSPACE = "MXNet's shared temp workspace after a run-time op failure"


def differs_only_with_few_workspaces(seed):
    """Whether SEED, each time in a fresh process, differs with this run's CPU temp workspaces
    (MXNet's default: 4 copies drawn round robin) and agrees with 64 copies (MXNET_CPU_TEMP_COPY):
    the shared-workspace class above."""
    def agrees(copies):
        env = dict(os.environ, **({"MXNET_CPU_TEMP_COPY": str(copies)} if copies else {}))
        run = subprocess.run([sys.executable, os.path.abspath(__file__), "--check", str(seed)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=600)
        return run.returncode == 0 and run.stdout.startswith("eager and jit() agree")
    try:
        return not agrees(None) and agrees(64)
    except subprocess.TimeoutExpired:
        return False


def essential_families(prog, kind):
    """Drops whole statement families one at a time while the mismatch persists; returns the
    families left (a cheap signature that groups repeats of one bug before any shrinking)
    and the smaller program."""
    for fam in sorted(prog.families() - {"input"}):
        cand = _without_families(prog, {fam})
        try:
            d, eager = check(cand)
        except Exception:  # noqa: BLE001
            continue
        if kind_of(d) == kind and not _mentions_name_error(eager):
            prog = cand
    return sorted(prog.families() - {"input"}), prog


def _handle_mismatch(args, prog, diff, known_counts, signatures):
    """Shrinks a mismatch and writes its reproducer; returns the record's fields."""
    kind = kind_of(diff)
    fams = prog.families()
    rec = {"mismatch": diff, "kind": kind, "size": prog.size()}
    # Mismatches that need a family of another item of issue 10: does it persist without them?
    known = sorted(f for f in fams if f in KNOWN_AREAS)
    if known:
        stripped = _without_families(prog, set(known))
        d2 = None
        try:
            d2, eager2 = check(stripped)
            if _mentions_name_error(eager2):
                d2 = None
        except Exception:  # noqa: BLE001
            d2 = None
        if kind_of(d2) != kind:
            area = ", ".join(sorted({KNOWN_AREAS[f] for f in known}))
            rec["known_area"] = area
            known_counts[area] += 1
            if known_counts[area] > args.known_repros:
                return rec
        else:
            prog = stripped
    fams_left, prog = essential_families(prog, kind)
    rec["signature"] = "%s: %s" % (kind, "+".join(fams_left))
    signatures[rec["signature"]] += 1
    if signatures[rec["signature"]] > args.repros_per_signature:
        return rec
    small = shrink(prog, kind, budget_s=args.shrink_s)
    d3, _ = check(small)
    if d3 is None:  # the shrunk program depends on state left by earlier programs
        small, d3 = prog, diff
    rec["shrunk_size"] = small.size()
    rec["shrunk_families"] = sorted(small.families())
    rec["shrunk_mismatch"] = d3
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "repro_seed%d.py" % prog.seed)
    with open(path, "w") as f:
        f.write(reproducer_text(small, d3, rec["size"]).replace("python %s", "python " + os.path.relpath(path)))
    rec["reproducer"] = path
    return rec


def _without_families(prog, fams):
    c = prog.copy()

    def strip(lst):
        out = []
        for s in lst:
            if s.family in fams:
                continue
            if s.children is not None:
                s.children = strip(s.children)
            out.append(s)
        return out
    c.prelude, c.body = strip(c.prelude), strip(c.body)
    return c


# ------------------------------------------------------------------ the parent: shards, progress, crashes

def load_progress(path, args):
    if os.path.exists(path):
        with open(path) as f:
            p = json.load(f)
        if p.get("shard") != "%d/%d" % args.shard or p.get("start") != args.start:
            sys.exit("%s belongs to shard %s start %s" % (path, p.get("shard"), p.get("start")))
        return p
    return {"shard": "%d/%d" % args.shard, "start": args.start, "next_k": 0, "programs": 0, "exact_programs": 0,
            "mismatches": [], "crashes": [], "hangs": [], "harness_errors": [], "flaky": 0,
            "known_area": {}, "families": {}, "eager_raised": {}, "elapsed_s": 0.0, "worker_stats": []}


def save_progress(path, p):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(p, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def start_worker(args, from_k, to_k):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--shard", "%d/%d" % args.shard,
           "--start", str(args.start), "--from-k", str(from_k), "--to-k", str(to_k), "--out", args.out,
           "--shrink-s", str(args.shrink_s), "--known-repros", str(args.known_repros),
           "--repros-per-signature", str(args.repros_per_signature)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if not args.verbose else None,
                            text=True, bufsize=1)


def parent(args):
    os.makedirs(args.out, exist_ok=True)
    p = load_progress(args.progress, args)
    t_start = time.time()
    elapsed0 = p["elapsed_s"]
    last_save = time.time()
    stopped = False
    while p["next_k"] < args.programs and not stopped:
        to_k = min(args.programs, p["next_k"] + args.restart_every)
        w = start_worker(args, p["next_k"], to_k)
        current = None
        buf = ""
        while True:
            ready, _, _ = select.select([w.stdout], [], [], args.timeout)
            if not ready:  # no event for --timeout seconds: a hang
                w.kill()
                w.wait()
                seed = args.start + args.shard[0] + current * args.shard[1] if current is not None else None
                p["hangs"].append({"k": current, "seed": seed})
                print("HANG at program %s (seed %s): worker killed after %ds" % (current, seed, args.timeout),
                      flush=True)
                p["next_k"] = (current if current is not None else p["next_k"]) + 1
                break
            line = w.stdout.readline()
            if not line:  # the worker exited
                rc = w.wait()
                if rc != 0 and current is not None:
                    seed = args.start + args.shard[0] + current * args.shard[1]
                    p["crashes"].append({"k": current, "seed": seed, "returncode": rc})
                    print("CRASH at program %d (seed %d): worker exit status %d" % (current, seed, rc), flush=True)
                    p["next_k"] = current + 1
                break
            ev = json.loads(line)
            if ev["event"] == "start":
                current = ev["k"]
            elif ev["event"] == "done":
                _account(p, ev, args)
                p["next_k"] = ev["k"] + 1
                current = None
            elif ev["event"] == "stats":
                p["worker_stats"].append(ev["stats"])
            if args.until and time.time() >= args.until and current is None:
                # Out of time: stop between programs, so the counts are exactly what ran.
                w.kill()
                w.wait()
                stopped = True
                print("deadline reached: stopped after program %d" % (p["next_k"] - 1), flush=True)
                break
            if time.time() - last_save > 30:
                p["elapsed_s"] = elapsed0 + time.time() - t_start
                save_progress(args.progress, p)
                last_save = time.time()
                rate = p["programs"] / max(p["elapsed_s"], 1e-9)
                print("[%s] %d/%d programs, %d mismatches (%d in other items' areas), %d crashes, %d hangs, "
                      "%.1f programs/s" % (time.strftime("%H:%M:%S"), p["programs"], args.programs,
                                           len(p["mismatches"]), sum(p["known_area"].values()),
                                           len(p["crashes"]), len(p["hangs"]), rate), flush=True)
    p["elapsed_s"] = elapsed0 + time.time() - t_start
    save_progress(args.progress, p)
    summary(p)


def _account(p, ev, args):
    p["programs"] += 1
    p["exact_programs"] += bool(ev.get("exact"))
    for f in ev.get("families", []):
        p["families"][f] = p["families"].get(f, 0) + 1
    for e in ev.get("eager_raised", []):
        p["eager_raised"][e] = p["eager_raised"].get(e, 0) + 1
    p["flaky"] += bool(ev.get("flaky"))
    if ev.get("harness_error"):
        p["harness_errors"].append({"seed": ev["seed"], "error": ev["harness_error"]})
        print("HARNESS ERROR at seed %d:\n%s" % (ev["seed"], ev["harness_error"]), flush=True)
    if "mismatch" in ev:
        m = {k: ev.get(k) for k in ("seed", "mismatch", "kind", "size", "known_area", "shrunk_size",
                                    "shrunk_families", "shrunk_mismatch", "reproducer", "signature")}
        if ev.get("known_area"):
            p["known_area"][ev["known_area"]] = p["known_area"].get(ev["known_area"], 0) + 1
        if m["reproducer"]:
            m["standalone"] = standalone_reproduces(m["reproducer"])
        p["mismatches"].append(m)
        print("MISMATCH seed %d (%s%s): %s%s" % (ev["seed"], ev["kind"],
                                                 ", " + ev["known_area"] if ev.get("known_area") else "",
                                                 ev.get("shrunk_mismatch") or ev["mismatch"],
                                                 "\n    reproducer %s (%d statements; standalone: %s)"
                                                 % (m["reproducer"], m["shrunk_size"], m["standalone"])
                                                 if m["reproducer"] else ""), flush=True)


def summary(p):
    print()
    print("fuzz shard %s: %d programs run (%d bit-exact), %.0f s" % (p["shard"], p["programs"], p["exact_programs"],
                                                                     p["elapsed_s"]))
    own = [m for m in p["mismatches"] if not m.get("known_area")]
    print("mismatches: %d (%d in other items' areas: %s), crashes %d, hangs %d, harness errors %d, "
          "non-deterministic eager %d" % (len(p["mismatches"]), len(p["mismatches"]) - len(own),
                                          json.dumps(p["known_area"], sort_keys=True), len(p["crashes"]),
                                          len(p["hangs"]), len(p["harness_errors"]), p["flaky"]))
    groups = collections.OrderedDict()
    for m in p["mismatches"]:
        groups.setdefault(m.get("known_area") or m.get("signature") or m["kind"], []).append(m)
    for sig, ms in groups.items():
        print("  %dx %s (seeds %s%s)" % (len(ms), sig, ", ".join(str(m["seed"]) for m in ms[:8]),
                                        ", ..." if len(ms) > 8 else ""))
        for m in ms:
            if m.get("reproducer"):
                print("      %s (%s statements, standalone: %s): %s" % (
                    m["reproducer"], m["shrunk_size"], m.get("standalone"),
                    (m["shrunk_mismatch"] or "")[:300].replace("\n", " ")))
    for c in p["crashes"]:
        print("  CRASH seed %d exit %d" % (c["seed"], c["returncode"]))
    for hg in p["hangs"]:
        print("  HANG seed %s" % hg["seed"])
    print("families (programs using each): " + ", ".join("%s %d" % kv for kv in sorted(p["families"].items())))
    print("exceptions the eager runs observed: " + (", ".join("%s %d" % kv for kv in sorted(
        p["eager_raised"].items(), key=lambda kv: -kv[1])) or "none"))


def parse_shard(s):
    i, n = s.split("/")
    i, n = int(i), int(n)
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError("shard i/n needs 0 <= i < n")
    return i, n


def parse_until(s):
    """HH:MM UTC today (or tomorrow if already past) as a Unix time."""
    h, m = (int(v) for v in s.split(":"))
    now = time.time()
    t = now - now % 86400 + h * 3600 + m * 60
    return t if t > now else t + 86400


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", type=int, default=1000, help="programs in this shard")
    ap.add_argument("--shard", type=parse_shard, default=(0, 1), help="i/n: this runner's share of the seeds")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--progress", default=None, help="progress file (resumed if it exists)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="directory for reproducers")
    ap.add_argument("--timeout", type=float, default=600, help="seconds without progress that count as a hang")
    ap.add_argument("--shrink-s", type=float, default=300, help="time budget for shrinking one mismatch")
    ap.add_argument("--known-repros", type=int, default=3,
                    help="reproducers written per area of issue 10's other items (the rest are counted)")
    ap.add_argument("--repros-per-signature", type=int, default=2,
                    help="reproducers written per mismatch signature (kind + families it needs)")
    ap.add_argument("--restart-every", type=int, default=25000, help="programs per worker process")
    ap.add_argument("--until", type=parse_until, default=None,
                    help="HH:MM (UTC): stop between programs at that time (resume later with the same command)")
    ap.add_argument("--verbose", action="store_true", help="show the worker's stderr")
    ap.add_argument("--show", type=int, metavar="SEED", help="print the program of SEED and exit")
    ap.add_argument("--check", type=int, metavar="SEED", help="run SEED in this process and print the result")
    ap.add_argument("--eager-only", type=int, metavar="SEED",
                    help="run SEED eagerly only, minpy_jit never imported (does a crash happen in MXNet alone?)")
    ap.add_argument("--history", type=int, metavar="SEED",
                    help="replay SEED after the programs its worker ran before it, minimise those, write "
                         "DIR/history_seedSEED.py (see fuzz_history.py); with --shard, --start, --restart-every "
                         "and --restarts (or --progress) as the run had them")
    ap.add_argument("--restarts", type=lambda s: [int(v) for v in s.split(",") if v], default=[],
                    help="with --history: seeds after which the run started a new worker (crashes, hangs, stops)")
    ap.add_argument("--history-last", type=int, default=0,
                    help="with --history: only the last N programs of the worker's history")
    ap.add_argument("--history-shrink-s", type=float, default=0,
                    help="with --history: also shrink the programs' statements for up to this many seconds")
    ap.add_argument("--trial-timeout", type=float, default=120,
                    help="with --history: seconds per trial subprocess, plus 0.5 s per program replayed")
    ap.add_argument("--no-fork", action="store_true",
                    help="with --history: every trial a new interpreter instead of a fork of one that imported MXNet")
    ap.add_argument("--replay", metavar="JSON", help=argparse.SUPPRESS)
    ap.add_argument("--replay-serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--from-k", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--to-k", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.show is not None:
        prog = fuzz_gen.generate(args.show)
        print(prog.source())
        print("# config %r, exact %r, families %s" % (prog.config, prog.exact, sorted(prog.families())))
        return
    if args.eager_only is not None:
        eager_only(args.eager_only)
        return
    if args.check is not None:
        prog = fuzz_gen.generate(args.check)
        d, eager = check(prog)
        print(d or "eager and jit() agree")
        print("eager exceptions: %s" % _eager_exceptions(eager))
        return
    if args.worker:
        worker(args)
        return
    if args.replay:
        fuzz_history.replay_child(args.replay)
        return
    if args.replay_serve:
        fuzz_history.replay_server()
        return
    if args.history is not None:
        sys.exit(fuzz_history.history(args))
    if args.progress is None:
        args.progress = os.path.join(args.out, "fuzz-%dof%d.json" % args.shard)
    parent(args)


if __name__ == "__main__":
    main()
