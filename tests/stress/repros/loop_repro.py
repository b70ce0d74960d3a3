"""Runs a fuzz reproducer's comparison N times in one process and counts the runs that differ:
for a difference that comes and goes (timing), where one standalone run proves little.

    PYTHONPATH=. .venv/bin/python tests/stress/repros/loop_repro.py tests/stress/repros/repro_seed11004645.py 24
"""
import ast
import importlib.util
import re
import sys


def main(path, n):
    spec = importlib.util.spec_from_file_location("repro", path)
    repro = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(repro)  # its `if __name__ == '__main__'` part does not run
    text = open(path).read()
    seed = int(re.search(r"compare_runs\(program, (\d+)", text).group(1))
    exact = "exact=True" in text
    config = ast.literal_eval(re.search(r"config=(\{[^}]*\})", text).group(1))  # the literal the fuzzer wrote
    differ = 0
    for _ in range(n):
        if repro.compare_runs(repro.program, seed, exact=exact, config=config):
            differ += 1
    print("%d of %d runs differ" % (differ, n))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20))
