"""Interrupt: KeyboardInterrupt raised at random points inside jit() blocks, compared with eager.

    PYTHONPATH=. .venv/bin/python tests/stress/interrupt.py --interrupts 1000 --json tests/stress/out/interrupt.json
    PYTHONPATH=. .venv/bin/python tests/stress/interrupt.py --show 17        # print program 17
    PYTHONPATH=. .venv/bin/python tests/stress/interrupt.py --program 17 --trials 40   # one program only

Each program (seeded) is a list of statements over a dict `V` of float32 arrays: elementwise
chains (fused), in-place writes (`+=`, `out=`, `x[:] =`, a slice of a view), matrix products,
reductions with broadcasts, concat/split, casts, reads and explicit flushes in the middle of the
block, nested scopes, autograd (`record()` + `backward()`), a Gluon Dense layer trained by a
Trainer with momentum, an `sgd_update` op. The program runs eagerly once, with every array
read after each statement (the states S[0] .. S[n]). Then it runs under `jit()` several
times, each time from fresh inputs, and each time a KeyboardInterrupt is delivered at a
random point, chosen by one of five methods (in turn):

* raise:  a profile hook (sys.setprofile) raises it at the k-th point where Python checks for
          signals that the hook sees (a Python function's start, the return of any call), k
          below the number an uninterrupted run has;
* signal: at the k-th profile event (any) the hook sets a SIGALRM 1-500 us ahead, whose
          handler raises it: Python raises it at its next check point after the signal
          arrives -- wherever that is, also inside Python code the C++ runtime calls;
* op:     it is raised instead of the k-th recorded op call (`_core.invoke`);
* flush:  as the k-th flush starts (scope exit, explicit flush, a guarded C API call:
          `asnumpy`, `backward`, ...), SIGALRM is set 1-2000 us ahead, so it arrives while
          the flush runs;
* timer:  SIGALRM after a random delay within the block's measured duration (a Ctrl-C at
          a random moment).

After each trial: the exception that left the block must be KeyboardInterrupt (or none, when
Python swallowed it, e.g. inside a __del__: counted). Every array the program holds must read
one of eager's values for it -- its value before the statement that was interrupted or after
it (statements that completed count as done) -- or raise; an array the block never wrote must
read its value. Then the runtime must be idle (no open scope, MXNet's hooks removed, nothing
pending), and a new jit() block (on fresh inputs and on the program's untouched inputs) must
work and equal eager. Prints the counts per method and every failure; --json writes them;
exit status 1 on any failure. Not collected by pytest.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time

import numpy as np

import mxnet as mx
from mxnet import autograd, gluon, nd

import minpy_jit
from minpy_jit import _core, intercept

METHODS = ("raise", "signal", "op", "flush", "timer")
# Before scope.cc (commit 1b1162b and older) the count lived in intercept.py: the campaign runs there too.
open_scopes = getattr(_core, "open_scopes", lambda: intercept._active_scopes)
close_scope = getattr(_core, "close_scope", None)
SHAPE = (4, 5)
RTOL, ATOL = 1e-5, 1e-6  # jit()'s fused transcendental kernels and lifted updates differ by a few ulps


# ------------------------------------------------------------------ programs

class Program:
    def __init__(self, seed, stmts):
        self.seed, self.stmts = seed, stmts
        self.codes = [compile(s, "<interrupt program %d, statement %d>" % (seed, i), "exec")
                      for i, s in enumerate(stmts)]

    def source(self):
        return "\n".join("# statement %d\n%s" % (i, s) for i, s in enumerate(self.stmts))


def generate(seed):
    rng = np.random.RandomState(seed)
    names = ["a0", "a1", "a2", "a3"]  # arrays of SHAPE (the prelude makes them)
    fresh = [0]
    stmts = []

    def pick():
        return names[rng.randint(len(names))]

    def new_name():
        fresh[0] += 1
        n = "t%d" % fresh[0]
        names.append(n)
        return n

    def scalar():
        return repr(float(rng.choice([0.5, 0.25, 2.0, -1.0, 1.5, 0.125])))

    def one():
        x, y, z = pick(), pick(), pick()
        s = scalar()
        kind = rng.randint(20)
        if kind == 0:
            return "V[%r] = nd.relu(V[%r] * %s + V[%r])" % (new_name(), x, s, y)
        if kind == 1:
            return "V[%r] = nd.tanh(V[%r]) - V[%r] / 2" % (new_name(), x, y)
        if kind == 2:
            return "V[%r] += V[%r]" % (x, y)
        if kind == 3:
            return "V[%r][:] = V[%r] * %s" % (x, y, s)
        if kind == 4:
            return "nd.elemwise_mul(V[%r], V[%r], out=V[%r])" % (x, y, z)
        if kind == 5:
            return "V[%r] = nd.dot(V[%r], V['w0'])" % (new_name(), x)
        if kind == 6:
            return "V[%r] = nd.broadcast_add(V[%r], nd.sum(V[%r], axis=1, keepdims=True))" % (new_name(), x, y)
        if kind == 7:
            return "READ(V[%r])" % x
        if kind == 8:
            return "FLUSH()"
        if kind == 9:
            return "V[%r][1:3] += %s" % (x, s)
        if kind == 10:
            return ("with autograd.record():\n    L = (V['p0'] * V[%r] + %s).sum()\nL.backward()" % (x, s))
        if kind == 11:
            return ("with autograd.record():\n    L = NET(V[%r]).sum()\nL.backward()\nTR.step(4)" % x)
        if kind == 12:
            return "nd.sgd_update(V['w0'], V['g0'], lr=0.1, wd=0.01, out=V['w0'])"
        if kind == 13:
            return "with J():\n    V[%r] = V[%r] * V[%r] + %s" % (new_name(), x, y, s)
        if kind == 14:
            return "V[%r] = nd.exp(V[%r] * 0.5) + nd.log(nd.abs(V[%r]) + 1)" % (new_name(), x, y)
        if kind == 15:
            d, e = new_name(), new_name()
            return "V[%r], V[%r] = nd.split(nd.concat(V[%r], V[%r], dim=1), num_outputs=2, axis=1)" % (d, e, x, y)
        if kind == 16:
            return "V[%r] = V[%r].astype('float16').astype('float32') * %s" % (new_name(), x, s)
        if kind == 17:
            return "V[%r].copyto(V[%r])" % (x, y) if x != y else "V[%r] = V[%r].copy()" % (new_name(), x)
        if kind == 18:  # a loop, unrolled: each iteration is a statement (a state eager reaches)
            return ["V[%r] = V[%r] * %s + 1" % (x, x, s)] * 3
        return "V[%r] = nd.clip(V[%r] - V[%r], -1, 1)" % (new_name(), x, y)

    for _ in range(rng.randint(4, 26)):
        st = one()
        stmts.extend(st if isinstance(st, list) else [st])
    return Program(seed, stmts)


def prelude(seed):
    """Fresh inputs of a program (always eager): the arrays, a Dense layer and its Trainer."""
    rng = np.random.RandomState(seed + 7)
    V = {"a%d" % i: nd.array(rng.uniform(-1, 1, SHAPE).astype(np.float32)) for i in range(4)}
    V["w0"] = nd.array(rng.uniform(-0.5, 0.5, (5, 5)).astype(np.float32))
    V["g0"] = nd.array(rng.uniform(-0.5, 0.5, (5, 5)).astype(np.float32))
    V["p0"] = nd.array(rng.uniform(-1, 1, SHAPE).astype(np.float32))
    V["p0"].attach_grad()
    net = gluon.nn.Dense(5, in_units=5)
    net.initialize()
    net.weight.set_data(nd.array(rng.uniform(-0.5, 0.5, (5, 5)).astype(np.float32)))
    net.bias.set_data(nd.array(rng.uniform(-0.5, 0.5, (5,)).astype(np.float32)))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    return V, net, trainer


def arrays_of(V, net):
    """Every array a program holds, by name (gradients and parameters included)."""
    out = dict(V)
    out["p0.grad"] = V["p0"].grad
    for i, p in enumerate(net.collect_params().values()):  # by position: Gluon's names change per instance
        out["net.%d" % i] = p.data()
        out["net.%d.grad" % i] = p.grad()
    return out


def namespace(V, net, trainer, jitted):
    return {"V": V, "NET": net, "TR": trainer, "nd": nd, "autograd": autograd,
            "READ": lambda a: a.asnumpy(),
            "FLUSH": minpy_jit.flush if jitted else (lambda: None),
            "J": minpy_jit.jit if jitted else _no_scope}


class _no_scope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def eager_states(prog):
    """S[i]: every array's value after i statements, run eagerly."""
    V, net, trainer = prelude(prog.seed)
    ns = namespace(V, net, trainer, False)
    states = [{k: a.asnumpy().copy() for k, a in arrays_of(V, net).items()}]
    for code in prog.codes:
        exec(code, ns)
        states.append({k: a.asnumpy().copy() for k, a in arrays_of(V, net).items()})
    return states


def follow_up(x, w):
    """The block run after every trial: it must work and equal eager."""
    y = nd.relu(x * 1.5 - 0.25) + nd.dot(x, w)
    y += 1
    return [y, nd.sum(y, axis=0), nd.tanh(y) * 2]


# ------------------------------------------------------------------ delivering the interrupt

ALARM = {"armed": False, "fired": 0}


def _on_alarm(signum, frame):
    ALARM["fired"] += 1
    if ALARM["armed"]:
        ALARM["armed"] = False
        raise KeyboardInterrupt("interrupt campaign: SIGALRM")


def arm(seconds):
    ALARM["armed"] = True
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6))


def disarm():
    signal.setitimer(signal.ITIMER_REAL, 0)
    ALARM["armed"] = False


# Where Python itself raises a signal's exception: at a function's first instruction, at a
# return (a check after each call), at a loop's backward jump. A profile hook sees the first
# two; raising at a 'c_call' would abort a C call before it starts, which no signal can do.
CHECK_POINTS = ("call", "return", "c_return")


class Injector:
    """Counts profile events inside the block and delivers the interrupt at the chosen one."""

    def __init__(self, method, k, delay=None):
        self.method, self.k, self.delay = method, k, delay
        self.events = self.check_points = self.ops = self.flushes = 0
        self.fired_at = None

    @staticmethod
    def is_op(event, arg):
        return event == "c_call" and arg is _core.invoke

    @staticmethod
    def is_flush(event, arg):
        """A call that flushes: scope exit, explicit flush, a guarded C API call (asnumpy, ...)."""
        return event == "c_call" and (arg is _core.flush or arg is close_scope or arg is getattr(_core, "exit", 0) or
                                      getattr(arg, "__name__", None) in ("guarded", "__exit__"))

    def __call__(self, frame, event, arg):
        self.events += 1
        self.check_points += event in CHECK_POINTS
        op = self.is_op(event, arg)
        fl = self.is_flush(event, arg)
        self.ops += op
        self.flushes += fl
        if self.fired_at is not None or self.k is None:
            return
        m = self.method
        hit = {"raise": event in CHECK_POINTS and self.check_points == self.k, "signal": self.events == self.k,
               "op": op and self.ops == self.k, "flush": fl and self.flushes == self.k}[m]
        if not hit:
            return
        self.fired_at = "%s #%d (%s %s in %s:%d)" % (
            m, self.k, event, getattr(arg, "__name__", "") if event.startswith("c_") else frame.f_code.co_name,
            os.path.basename(frame.f_code.co_filename), frame.f_lineno)
        sys.setprofile(None)
        if m in ("raise", "op"):
            raise KeyboardInterrupt("interrupt campaign: %s" % self.fired_at)
        # SIGALRM a few microseconds from now: it arrives while whatever comes next runs (in
        # C++ during a flush, say), and Python raises it at the next check point.
        self.fired_at += " + %.0f us" % (self.delay * 1e6)
        arm(self.delay)


def _settle():
    """Lets a tripped SIGINT fire here rather than later (Python checks at calls and jumps)."""
    for _ in range(3):
        _noop()


def _noop():
    return None


def run_jitted(prog, method=None, k=None, delay=None):
    """One jitted run; returns (V, net, trainer, what left the block, statements completed, injector, seconds)."""
    V, net, trainer = prelude(prog.seed)
    ns = namespace(V, net, trainer, True)
    done = [0]
    inj = Injector(method, k, delay) if method not in ("timer", "plain") else None
    left = None
    fired_before = ALARM["fired"]
    t0 = time.perf_counter()
    try:
        try:
            if method == "timer":
                arm(delay)
            elif inj is not None:
                sys.setprofile(inj)
            with minpy_jit.jit():
                for i, code in enumerate(prog.codes):
                    exec(code, ns)
                    done[0] = i + 1
        finally:
            sys.setprofile(None)
            disarm()
        _settle()
    except KeyboardInterrupt as e:
        left = ("KeyboardInterrupt", str(e))
    except Exception as e:  # noqa: BLE001 - anything else is a finding
        left = (type(e).__name__, str(e)[:500])
    seconds = time.perf_counter() - t0
    if inj is not None:
        inj.alarm_fired = ALARM["fired"] > fired_before
    return V, net, trainer, left, done[0], inj, seconds


# ------------------------------------------------------------------ checking a trial

def close(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)


def check_arrays(states, done, V, net, counts):
    """Problems with the arrays after an interrupted run (empty if none)."""
    problems = []
    before = states[done]
    after = states[done + 1] if done + 1 < len(states) else None
    untouched = {k for k in states[0] if all(close(s[k], states[0][k]) for s in states if k in s)}
    try:
        arrays = arrays_of(V, net)
    except Exception as e:  # noqa: BLE001
        return ["reading the program's gradients/parameters raised %s: %s" % (type(e).__name__, e)]
    for name, arr in arrays.items():
        try:
            got = arr.asnumpy()
        except Exception as e:  # noqa: BLE001 - raising is allowed, but not for an array the block never wrote
            counts["reads_raised"] += 1
            counts["raised_types"][type(e).__name__] = counts["raised_types"].get(type(e).__name__, 0) + 1
            if name in untouched and name in before:
                problems.append("%s (never written by the block) raised %s: %s" % (name, type(e).__name__,
                                                                                  str(e)[:200]))
            continue
        counts["reads_ok"] += 1
        allowed = [s[name] for s in (before, after) if s is not None and name in s]
        if not any(close(got, want) for want in allowed):
            diffs = ["%.3g" % float(np.abs(got.astype(np.float64) - want).max()) if got.shape == want.shape
                     else "shape %s" % (want.shape,) for want in allowed]
            problems.append("%s reads a value that is neither eager's before statement %d nor after it "
                            "(max |diff| %s)" % (name, done, " / ".join(diffs)))
    return problems


def check_runtime_idle():
    problems = []
    if _core.depth() != 0:
        problems.append("a jit() scope is still open (depth %d)" % _core.depth())
    if open_scopes() != 0:
        problems.append("%d scopes counted open" % open_scopes())
    if getattr(intercept, "hooks_active", intercept.hooks_installed)():  # older builds: hooks came out after each scope
        problems.append("MXNet's hooks are still active outside any scope")
    if _core.pending() != 0:
        problems.append("%d recorded ops still pending" % _core.pending())
    return problems


def check_next_block(seed, V_fresh_inputs):
    """A new jit() block on fresh inputs and on the program's untouched inputs equals eager."""
    problems = []
    rng = np.random.RandomState(seed + 11)
    cases = [("fresh", nd.array(rng.uniform(-1, 1, SHAPE).astype(np.float32)),
              nd.array(rng.uniform(-1, 1, (5, 5)).astype(np.float32)))] + V_fresh_inputs
    for label, x, w in cases:
        want = [a.asnumpy() for a in follow_up(x, w)]
        try:
            with minpy_jit.jit():
                got = follow_up(x, w)
            got = [a.asnumpy() for a in got]
        except Exception as e:  # noqa: BLE001
            problems.append("the next jit() block (%s inputs) raised %s: %s" % (label, type(e).__name__, str(e)[:300]))
            continue
        if not all(close(g, w_) for g, w_ in zip(got, want)):
            problems.append("the next jit() block (%s inputs) differs from eager" % label)
    return problems


# ------------------------------------------------------------------ the campaign

def new_counts():
    return {"trials": 0, "delivered": 0, "swallowed": 0, "not_reached": 0, "reads_ok": 0, "reads_raised": 0,
            "raised_types": {}, "interrupted_in_statement": 0, "interrupted_after_statements": 0,
            "autograd_state_left_set": 0, "failures": 0}


def trial(prog, states, method, rng, dry, counts, failures, verbose):
    if method == "raise":
        k = int(rng.randint(1, dry.check_points + 1))
    elif method == "signal":
        k = int(rng.randint(1, dry.events + 1))
    elif method == "op":
        k = int(rng.randint(1, max(dry.ops, 1) + 1))
    elif method == "flush":
        k = int(rng.randint(1, max(dry.flushes, 1) + 1))
    else:
        k = None
    delay = {"timer": float(rng.uniform(0, dry_seconds[prog.seed])), "signal": float(rng.uniform(1e-6, 5e-4)),
             "flush": float(rng.uniform(1e-6, 2e-3))}.get(method)
    fired_before = ALARM["fired"]
    V, net, trainer, left, done, inj, _ = run_jitted(prog, method, k, delay)
    c = counts[method]
    c["trials"] += 1
    problems = []
    if autograd.is_recording() or autograd.is_training():
        # Interrupted inside MXNet's own `with autograd.record()` enter/exit (Python code that
        # sets the flag, then restores it): MXNet leaves the flag set, with or without jit().
        c["autograd_state_left_set"] += 1
        autograd.set_recording(False)
        autograd.set_training(False)
    if left is None:
        if method in ("raise", "op"):
            fired = inj.fired_at is not None
        else:  # the alarm went off inside the block, but the exception did not leave it
            fired = ALARM["fired"] > fired_before
        c["swallowed" if fired else "not_reached"] += 1
        # A KeyboardInterrupt swallowed by Python (a __del__) or never reached: the block ran to the end.
    elif left[0] == "KeyboardInterrupt":
        c["delivered"] += 1
        c["interrupted_in_statement" if done < len(prog.stmts) else "interrupted_after_statements"] += 1
    else:
        problems.append("the block raised %s instead of KeyboardInterrupt: %s" % left)
    problems += check_arrays(states, done if left is not None else len(prog.stmts), V, net, c)
    problems += check_runtime_idle()
    untouched = [k for k in ("a0", "a1", "a2", "a3") if all(close(s[k], states[0][k]) for s in states)]
    problems += check_next_block(prog.seed, [("untouched %s" % n, V[n], V["w0"]) for n in untouched[:1]
                                             if all(close(s["w0"], states[0]["w0"]) for s in states)])
    problems += check_runtime_idle()
    if problems:
        c["failures"] += 1
        failures.append({"seed": prog.seed, "method": method, "k": k, "delay": delay,
                         "fired_at": inj.fired_at if inj else "timer %.6f s" % delay, "statements_done": done,
                         "left": left, "problems": problems})
        print("FAILURE seed %d method %s k %s delay %s (fired at %s, %d statements done, left %s):\n  %s"
              % (prog.seed, method, k, delay, failures[-1]["fired_at"], done, left, "\n  ".join(problems)),
              flush=True)
        # Start the next trial from a usable runtime, so one failure is not counted many times.
        for _ in range(3):
            try:
                while open_scopes() > 0 or _core.depth() > 0:
                    if close_scope:
                        close_scope()
                    else:
                        if _core.depth() > 0:
                            _core.exit()
                        if open_scopes() > 0:
                            intercept.release()
                if hasattr(intercept, "uninstall"):
                    minpy_jit.flush()
                elif intercept.hooks_installed():
                    intercept._unpatch()
                break
            except Exception:  # noqa: BLE001
                pass
    elif verbose:
        print("ok seed %d %s k=%s fired at %s, %d statements done, left %s" % (
            prog.seed, method, k, inj.fired_at if inj else delay, done, left and left[0]), flush=True)
    return left is not None and left[0] == "KeyboardInterrupt"


dry_seconds = {}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interrupts", type=int, default=1000, help="stop once this many were delivered")
    ap.add_argument("--trials", type=int, default=10, help="trials per program (the methods in turn)")
    ap.add_argument("--start", type=int, default=0, help="first program seed")
    ap.add_argument("--program", type=int, default=None, help="run only this program seed")
    ap.add_argument("--show", type=int, default=None, help="print the program of this seed and exit")
    ap.add_argument("--json", default=None)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.show is not None:
        print(generate(args.show).source())
        return
    signal.signal(signal.SIGALRM, _on_alarm)
    # Interrupted traces are new sequences: without this the scope's site would pass the
    # recompile limit and run eagerly, and the trials would test eager replay only.
    minpy_jit.config(recompile_limit=10 ** 9)
    unraisable = []
    sys.unraisablehook = lambda u: unraisable.append("%s in %r" % (type(u.exc_value).__name__, u.object))

    counts = {m: new_counts() for m in METHODS}
    failures = []
    t0 = time.time()
    seed = args.program if args.program is not None else args.start
    programs = 0
    delivered = 0
    while delivered < args.interrupts:
        prog = generate(seed)
        states = eager_states(prog)
        # Uninterrupted runs first: they must equal eager, and the second (its graphs cached, as
        # in the trials) measures the block.
        for _ in range(2):
            V, net, trainer, left, done, dry, secs = run_jitted(prog, None)
        dry_seconds[seed] = run_jitted(prog, "plain")[-1]  # without the profile hook's overhead
        problems = ([] if left is None else ["the uninterrupted block raised %s: %s" % left])
        problems += check_arrays(states, len(prog.stmts), V, net, new_counts())
        problems += check_runtime_idle()
        if problems:
            failures.append({"seed": seed, "method": "none", "problems": problems})
            print("FAILURE seed %d without an interrupt:\n  %s" % (seed, "\n  ".join(problems)), flush=True)
        rng = np.random.RandomState(seed)
        for t in range(args.trials):
            delivered += trial(prog, states, METHODS[t % len(METHODS)], rng, dry, counts, failures, args.verbose)
        programs += 1
        if programs % 10 == 0:
            print("[%s] %d programs, %d interrupts delivered, %d failures, %.0f s" % (
                time.strftime("%H:%M:%S"), programs, delivered, len(failures), time.time() - t0), flush=True)
        if args.program is not None:
            break
        seed += 1

    elapsed = time.time() - t0
    total = {k: sum(counts[m][k] for m in METHODS) for k in ("trials", "delivered", "swallowed", "not_reached",
                                                             "reads_ok", "reads_raised", "failures")}
    print()
    print("interrupt: %d programs (seeds %d..%d), %d trials, %d KeyboardInterrupts delivered inside jit() blocks, "
          "%d swallowed by Python, %d not reached; %d array reads equal to eager's, %d raised; %d failures; %.0f s"
          % (programs, args.program if args.program is not None else args.start, seed, total["trials"],
             total["delivered"], total["swallowed"], total["not_reached"], total["reads_ok"], total["reads_raised"],
             len(failures), elapsed))
    for m in METHODS:
        c = counts[m]
        print("  %-6s trials %4d  delivered %4d (in a statement %d, after the last %d)  swallowed %d  not reached %d"
              "  reads ok %d raised %d %s  autograd flag left set %d  failures %d" % (
                  m, c["trials"], c["delivered"], c["interrupted_in_statement"], c["interrupted_after_statements"],
                  c["swallowed"], c["not_reached"], c["reads_ok"], c["reads_raised"], c["raised_types"] or "",
                  c["autograd_state_left_set"], c["failures"]))
    if unraisable:
        print("exceptions Python reported as unraisable (swallowed): %d, e.g. %s" % (len(unraisable), unraisable[:3]))
    st = minpy_jit.stats()
    print("stats: executions %d, eager replays %d, cache hits %d, misses %d, graphs cached %d" % (
        st["executions"], st["eager_replays"], st["cache_hits"], st["cache_misses"], st["graphs_cached"]))
    print("PASS" if not failures else "FAIL")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"programs": programs, "first_seed": args.start, "counts": counts, "failures": failures,
                       "unraisable": len(unraisable), "seconds": round(elapsed, 1)}, f, indent=1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
