"""History reproducer: a fuzz mismatch that needs the programs run before it in its worker.

The fuzzer's worker runs thousands of programs in one process, and every program opens its
`with J():` in the same file ('fuzzprog.py'), so the jit() state of a site (graph cache, lifted
hot scalars, recompile counts, ...) carries over from one program to the next, as in a user's
long-running loop. A mismatch that passes standalone may need that history. `fuzz.py --history
SEED` (this module) rebuilds it:

1. the worker's history: the seeds its worker ran before SEED, from the worker's start (the last
   restart at or before SEED: every --restart-every programs, and after each crash, hang or stop
   given by --restarts or read from --progress);
2. confirms that replaying them in one fresh process, then SEED, gives the same kind of
   difference at the same place;
3. minimises the prior programs: suffixes of the history first (the last 25, 100, 400, ...), then
   delta debugging by bisection (minimize) of the shortest suffix that reproduces, every trial in a fresh
   subprocess with a timeout; optionally (--history-shrink-s) shrinks each remaining program's
   statements too;
4. writes DIR/history_seedN.py, a standalone script (the harness, then the programs as text,
   each compiled as 'fuzzprog.py' like in the worker) that runs the prior programs then SEED and
   exits 1 while eager and jit() differ.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------ delta debugging

def minimize(items, fails, log=lambda msg: None):
    """A 1-minimal subsequence of items for which fails(subsequence) holds; fails(items) is
    assumed, order is kept, a trial that raises counts as not failing. Delta debugging by
    bisection, suited to histories where a few programs matter among thousands: the shortest
    suffix of the candidates that still fails (with those already kept) is found by binary
    search; its first item is needed and kept, the items before it are dropped; repeated until
    the kept items fail alone; then each kept item is tried without. About k*log2(n) trials for
    k needed items among n, each trial no longer than the suffix it tries."""
    def test(c):
        try:
            return bool(fails(c))
        except Exception as e:  # noqa: BLE001 - a broken trial does not reproduce
            log("trial raised %r" % (e,))
            return False

    order = {x: i for i, x in enumerate(items)}
    with_kept = lambda kept, rest: sorted(set(kept) | set(rest), key=order.__getitem__)  # noqa: E731
    kept, cands = [], list(items)
    while cands and not test(with_kept(kept, [])):
        lo, hi = 0, len(cands) - 1  # the largest i with test(kept + cands[i:]); i = 0 holds
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if test(with_kept(kept, cands[mid:])):
                lo = mid
            else:
                hi = mid - 1
        kept.append(cands[lo])
        cands = cands[lo + 1:]
    kept = with_kept(kept, [])
    for x in list(kept):
        if len(kept) > 0 and test([y for y in kept if y != x]):
            kept.remove(x)
    return kept


# ------------------------------------------------------------------ the worker's history

def worker_first_seed(seed, start, shard, restart_every, restarts):
    """The first seed the worker that ran `seed` ran. restarts: seeds after which a new worker
    started (crashes, hangs, --until stops); the parent also starts one every restart_every."""
    i, n = shard
    k_target, rem = divmod(seed - start - i, n)
    if rem or k_target < 0:
        raise ValueError("seed %d is not in shard %d/%d from %d" % (seed, i, n, start))
    ks = sorted(divmod(s - start - i, n)[0] for s in restarts)
    next_k = 0
    while True:
        to_k = next_k + restart_every
        stop = [k for k in ks if next_k <= k < min(to_k, k_target)]
        if stop:
            next_k = stop[0] + 1
        elif k_target < to_k:
            return start + i + next_k * n
        else:
            next_k = to_k


def restarts_from_progress(path):
    with open(path) as f:
        p = json.load(f)
    return [c["seed"] for c in p.get("crashes", []) + p.get("hangs", []) if c.get("seed") is not None]


# ------------------------------------------------------------------ one replay, in a fresh process

def program_record(prog):
    return {"seed": prog.seed, "source": prog.source(), "config": prog.config, "exact": prog.exact}


def replay(programs):
    """Runs the programs (seeds or program records) in this process as the worker did (each
    compared eagerly vs jit(); one that differs also gets the worker's second eager run); returns
    the last one's difference, and whether three more eager runs of it differ (MXNet's garbage)."""
    import fuzz
    import fuzz_gen
    h = fuzz.harness()
    diff = eager = None
    for rec in programs:
        prog = fuzz_gen.generate(rec) if isinstance(rec, int) else _Recorded(rec)
        try:
            diff, eager = fuzz.check(prog)
            if diff is not None:
                h.run(fuzz.compile_program(prog), prog.seed, use_jit=False)  # as eager_deterministic
        except Exception as e:  # noqa: BLE001 - as the worker: a harness error ends nothing
            diff, eager = "harness error: %r" % (e,), None
    flaky = False
    if diff is not None and eager is not None:
        fn = fuzz.compile_program(prog)
        flaky = any(h.first_difference(eager, h.run(fn, prog.seed, use_jit=False), exact=True) for _ in range(3))
    return {"diff": diff, "name_error": bool(eager) and fuzz._mentions_name_error(eager), "eager_flaky": flaky}


def replay_child(path):
    """fuzz.py --replay FILE: replay() of the programs listed in FILE; one JSON line on stdout."""
    with open(path) as f:
        spec = json.load(f)
    out = sys.stdout
    sys.stdout = sys.stderr  # programs and MXNet print; the protocol keeps stdout
    out.write(json.dumps(replay(spec["programs"])) + "\n")
    out.flush()


def replay_server():
    """fuzz.py --replay-serve: imports MXNet and minpy_jit once, then for each request line on
    stdin (a JSON file of programs, a result file, a timeout) forks a child that replays them in a
    process whose jit() state is fresh (this one never runs a program) and writes the result;
    answers with one line on stdout. Saves the 1-8 s of a new interpreter per trial."""
    import signal
    import fuzz
    fuzz.harness()  # mxnet, minpy_jit and the harness's CustomOp, imported before any fork
    out = sys.stdout
    sys.stdout = sys.stderr
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                with open(req["programs"]) as f:
                    res = replay(json.load(f)["programs"])
                with open(req["result"], "w") as f:
                    json.dump(res, f)
            finally:
                os._exit(0)
        deadline = time.time() + req["timeout"]
        status = None
        while time.time() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.02)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = "timeout after %.0f s" % req["timeout"]
        out.write(json.dumps({"status": status}) + "\n")
        out.flush()


class _Recorded:
    """A program given as text (a shrunk one): what fuzz.check needs."""

    def __init__(self, rec):
        self.seed, self._src, self.config, self.exact = rec["seed"], rec["source"], rec["config"], rec["exact"]

    def source(self):
        return self._src


def location(diff):
    return diff.split(":", 1)[0] if diff else None


class Replayer:
    """Runs a list of programs (seeds or program records) in a fresh process (a fork of a server
    that imported MXNet once, or with fork=False a new interpreter); counts the trials.
    `reproduces(programs)` is True when the last program's difference has the target's kind and
    location."""

    def __init__(self, kind, where, timeout_s=120.0, per_program_s=0.5, log=print, fork=True):
        self.kind, self.where = kind, where
        self.timeout_s, self.per_program_s = timeout_s, per_program_s
        self.log = log
        self.fork = fork
        self.server = None
        self.trials = 0

    def _env(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(HERE)) + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def run(self, programs):
        self.trials += 1
        fd, path = tempfile.mkstemp(prefix="fuzz_history_", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"programs": programs}, f)
        timeout = self.timeout_s + self.per_program_s * len(programs)
        try:
            return self._forked(path, timeout) if self.fork else self._fresh(path, timeout)
        finally:
            os.unlink(path)

    def _fresh(self, path, timeout):
        try:
            p = subprocess.run([sys.executable, os.path.join(HERE, "fuzz.py"), "--replay", path],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               timeout=timeout, env=self._env())
        except subprocess.TimeoutExpired:
            return {"diff": None, "error": "timeout after %.0f s" % timeout}
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if p.returncode != 0 or not lines:
            return {"diff": None, "error": "exit status %d" % p.returncode}
        return json.loads(lines[-1])

    def _forked(self, path, timeout):
        import select
        if self.server is None or self.server.poll() is not None:
            self.server = subprocess.Popen([sys.executable, os.path.join(HERE, "fuzz.py"), "--replay-serve"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, text=True, bufsize=1, env=self._env())
        result = path + ".out"
        self.server.stdin.write(json.dumps({"programs": path, "result": result, "timeout": timeout}) + "\n")
        self.server.stdin.flush()
        ready, _, _ = select.select([self.server.stdout], [], [], timeout + 60)
        line = self.server.stdout.readline() if ready else ""
        if not line:
            self.close()
            return {"diff": None, "error": "replay server did not answer"}
        status = json.loads(line)["status"]
        try:
            with open(result) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {"diff": None, "error": "child status %s" % (status,)}
        finally:
            if os.path.exists(result):
                os.unlink(result)

    def close(self):
        if self.server is not None:
            self.server.kill()
            self.server.wait(timeout=30)
            self.server = None

    def reproduces(self, programs):
        import fuzz
        t = time.time()
        r = self.run(programs)
        ok = (fuzz.kind_of(r["diff"]) == self.kind and location(r["diff"]) == self.where
              and not r.get("name_error") and not r.get("eager_flaky"))
        self.log("  trial %d: %d programs, %s (%.0f s)%s" % (
            self.trials, len(programs), "reproduces" if ok else "agrees" if r["diff"] is None else "other",
            time.time() - t, " " + r["error"] if r.get("error") else ""))
        return ok


# ------------------------------------------------------------------ the command

def history(args):
    """fuzz.py --history SEED: confirm, minimise, write the reproducer. Returns its exit status."""
    import fuzz
    import fuzz_gen
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    seed = args.history
    restarts = list(args.restarts or [])
    if args.progress and os.path.exists(args.progress):
        restarts += restarts_from_progress(args.progress)
    first = worker_first_seed(seed, args.start, args.shard, args.restart_every, restarts)
    n = args.shard[1]
    prior = list(range(first, seed, n))
    restarts = set(restarts)
    prior = [s for s in prior if s not in restarts]  # a crash's own program: not in that worker
    if args.history_last:
        prior = prior[-args.history_last:]
    log("seed %d: its worker started at seed %d; %d programs before it" % (seed, first, len(prior)))

    target = fuzz_gen.generate(seed)
    probe = Replayer(None, None, args.trial_timeout, log=log, fork=not args.no_fork)
    try:
        return _history(args, seed, prior, target, probe, log)
    finally:
        probe.close()


def _history(args, seed, prior, target, probe, log):
    import fuzz
    import fuzz_gen
    r = probe.run([seed])
    log("standalone: %s%s" % (r["diff"] or "eager and jit() agree", " (eager not deterministic)" if r.get("eager_flaky") else ""))
    # Confirm on the last 200 programs first (most causes are recent), else on the whole history.
    sizes = sorted({min(200, len(prior)), len(prior)})
    if r["diff"] is not None and fuzz.kind_of(r["diff"]) is not None and not r.get("eager_flaky"):
        sizes = [0]  # it differs alone: no history needed
    for size in sizes:
        suffix = prior[len(prior) - size:]
        r = probe.run(suffix + [seed])
        diff = r["diff"]
        log("after its last %d predecessors: %s%s" % (size, diff or "eager and jit() agree", " " + r["error"] if r.get("error") else ""))
        if diff is not None and fuzz.kind_of(diff) is not None and not diff.startswith("harness error"):
            break
    else:
        log("the history does not reproduce a difference")
        return 2
    if r.get("eager_flaky"):
        log("eager MXNet is not deterministic here: four eager runs of seed %d after its history differ" % seed)
        return 3
    rep = probe
    rep.kind, rep.where = fuzz.kind_of(diff), location(diff)

    # The shortest suffix of the history that reproduces, then minimize() over it.
    size = 25
    while size < len(suffix):
        if rep.reproduces(suffix[-size:] + [seed]):
            suffix = suffix[-size:]
            break
        size *= 4
    log("minimising %d programs" % len(suffix))
    needed = minimize(suffix, lambda c: rep.reproduces(c + [seed]), log=log)
    log("needed: %s (%d trials so far)" % (needed or "nothing", rep.trials))
    progs = [fuzz_gen.generate(s) for s in needed] + [target]
    if args.history_shrink_s > 0:
        progs = shrink_all(progs, rep, args.history_shrink_s, log)
    r = rep.run([program_record(p) for p in progs])
    final = r["diff"] or diff
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "history_seed%d.py" % seed)
    with open(path, "w") as f:
        f.write(history_reproducer_text(progs, final, len(prior)).replace("python %s", "python " + os.path.relpath(path)))
    check = fuzz.standalone_reproduces(path)
    log("wrote %s (prior seeds %s; standalone: %s)\n%s" % (path, [p.seed for p in progs[:-1]], check, final))
    return 0 if check == "yes" else 1


def shrink_all(progs, rep, budget_s, log):
    """Shrinks the target, then each prior program, statement by statement (fuzz.shrink's
    candidates), keeping the others as they are; every trial replays the whole list."""
    import fuzz
    deadline = time.time() + budget_s
    for idx in [len(progs) - 1] + list(range(len(progs) - 1)):
        left = deadline - time.time()
        if left <= 0:
            break

        def fails(c, idx=idx):
            trial = progs[:idx] + [c] + progs[idx + 1:]
            return rep.reproduces([program_record(p) for p in trial])
        before = progs[idx].size()
        progs[idx] = fuzz.shrink(progs[idx], rep.kind, budget_s=left / 2 if idx == len(progs) - 1 else left,
                                 still_fails=fails)
        log("program of seed %d: %d -> %d statements" % (progs[idx].seed, before, progs[idx].size()))
    return progs


def history_reproducer_text(progs, diff, n_history):
    """A standalone script: the harness, then the programs as text, compiled under one file name
    (their jit() sites are file:line, shared as in the worker), run in order."""
    import fuzz
    with open(fuzz.HARNESS_FILE) as f:
        harness_src = f.read()
    target = progs[-1]
    head = ('"""minpy_jit fuzz history reproducer: seed %d after %d of the %d programs its worker ran\n'
            'before it (seeds %s), shrunk to %s statements.\n\n'
            'First difference (eager vs jit()): %s\n\n'
            '    PYTHONPATH=<minpy_jit checkout> python %%s    # exits 1 while jit() and eager differ\n'
            '"""\n' % (target.seed, len(progs) - 1, n_history, ", ".join(str(p.seed) for p in progs[:-1]) or "none",
                       " + ".join(str(p.size()) for p in progs),
                       diff.replace("\\", "\\\\").replace('"""', "'''")))
    body = harness_src.split('"""', 2)[2]
    programs = ",\n".join("    (%d, %r, %r,\n     %s)" % (p.seed, p.exact, p.config, _triple_quoted(p.source()))
                          for p in progs)
    tail = ("\n\n# ---------------------------------------------------------------- the programs\n"
            "import linecache  # noqa: E402\n\n"
            "# (seed, exact, config, source): the prior programs, then the one that differs\n"
            "PROGRAMS = [\n%s,\n]\n\n\n"
            "def compile_program(src, filename='fuzzprog.py'):\n"
            "    \"\"\"program(J, FLUSH, OBS) from its text; every program's `with J():` site is in the same\n"
            "    file, as in the fuzzer's worker, so one program's jit() state is seen by the next.\"\"\"\n"
            "    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)\n"
            "    ns = dict(globals())\n"
            "    exec(compile(src, filename, 'exec'), ns)\n"
            "    return ns['program']\n\n\n"
            "if __name__ == '__main__':\n"
            "    for seed, exact, config, src in PROGRAMS[:-1]:\n"
            "        print('prior seed %%d: %%s' %% (seed, compare_runs(compile_program(src), seed, exact=exact, config=config)\n"
            "                                     or 'eager and jit() agree'))\n"
            "    seed, exact, config, src = PROGRAMS[-1]\n"
            "    difference = compare_runs(compile_program(src), seed, exact=exact, config=config)\n"
            "    print(difference or 'eager and jit() agree')\n"
            "    raise SystemExit(1 if difference else 0)\n" % programs)
    return (head + "# ---------------------------------------------------------------- harness "
            "(tests/stress/fuzz_harness.py)" + body + tail)


def _triple_quoted(src):
    if '"""' in src or "\\" in src:
        return repr(src)
    return '"""\\\n' + src + '"""'
