"""@minpy_jit.function against the undecorated function, on many random programs.

    PYTHONPATH=. .venv/bin/python tests/stress/function_fuzz.py --programs 5000 --start 1000
    PYTHONPATH=. .venv/bin/python tests/stress/function_fuzz.py --programs 2000 --fuse   # our fused kernels

The programs and the check are those of tests/test_function_random.py (which runs 40 of them
in the suite): fragments, branches on shapes, on Python values and on array data, loops,
a global and a closure variable rebound between calls, in-place writes, a list appended to,
an error raised mid-function; every program called with changing arguments, decorated and
not, on copies of the same inputs. Here they run by the thousand in one process (so the
runtime's caches carry over between programs, as in a long-running job), and every failing
seed is printed with its first difference (the suite's check that repeated calls replay is
not counted here: a program whose branches follow its random data may never repeat its
guards). Not collected by pytest (no test_ prefix).
"""
import argparse
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/: the generator and conftest's helpers

import minpy_jit  # noqa: E402
from minpy_jit import _core  # noqa: E402

import test_function_random as programs  # noqa: E402


def run_one(seed, tmp):
    """None if the decorated function behaved as the plain one, else the first difference."""
    _core.fragment_reset_stats()
    try:
        programs.test_random_program(_Path(tmp), seed)
    except AssertionError as e:
        if e.args and isinstance(e.args[0], tuple) and e.args[0] and isinstance(e.args[0][0], dict):
            return None  # the suite's replay check (fragment stats): not a difference in results
        return str(e).split("\n")[0][:300] or "assertion failed"
    except Exception as e:  # noqa: BLE001 - a crash of the check itself is a finding too
        return "raised %s: %s" % (type(e).__name__, traceback.format_exc(limit=3)[-300:])
    return None


class _Path:
    """The bit of pathlib the generator's loader uses (tmp_path / name, write_text)."""

    def __init__(self, d):
        self.d = d

    def __truediv__(self, name):
        return _File(os.path.join(self.d, name))


class _File(str):
    def write_text(self, text):
        with open(self, "w") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--fuse", action="store_true", help="our fused kernels on (the suite runs MXNet's)")
    args = ap.parse_args()
    minpy_jit.config(fuse=args.fuse, recompile_limit=8)
    failures = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.start, args.start + args.programs):
            diff = run_one(seed, tmp)
            if diff:
                failures.append(seed)
                print("MISMATCH seed %d: %s" % (seed, diff), flush=True)
            done = seed - args.start + 1
            if done % 500 == 0:
                print("[%s] %d/%d programs, %d mismatches, %.1f programs/s" % (
                    time.strftime("%H:%M:%S"), done, args.programs, len(failures), done / (time.time() - t0)),
                    flush=True)
    print("%d programs (seeds %d-%d, fuse=%s), %d mismatches%s" % (
        args.programs, args.start, args.start + args.programs - 1, args.fuse, len(failures),
        (": " + " ".join(map(str, failures))) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
