#!/usr/bin/env bash
# Creates .venv (if needed), installs the pinned dependencies and builds the
# extension. Idempotent: safe to run before every demo or test run. Prints one
# line per stage with its time; the compiler's output goes to .venv/build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

now() { date +%s%N; }
# stage NAME START: "setup: NAME (12.3 s)"
stage() {
  local ds=$((($(now) - $2) / 100000000))
  printf 'setup: %-58s (%d.%d s)\n' "$1" $((ds / 10)) $((ds % 10))
}

t=$(now)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  stage "venv created (.venv)" "$t"
else
  stage "venv .venv exists" "$t"
fi
VPY=.venv/bin/python

t=$(now)
stamp=.venv/.deps-installed
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
  echo "setup: installing dependencies (requirements.txt; a few minutes on a fresh machine) ..."
  $VPY -m pip install -q --upgrade pip setuptools wheel
  $VPY -m pip install -q -r requirements.txt
  touch "$stamp"
  stage "dependencies installed" "$t"
else
  stage "dependencies up to date" "$t"
fi

# Build the extensions in place (the recorder _core and the kernel library _kernels) when
# either is missing or any C++ source is newer than it.
t=$(now)
stale=""
for mod in _core _kernels; do
  so=$(ls minpy_jit/$mod*.so 2>/dev/null | head -1 || true)
  if [ -z "$so" ] || [ -n "$(find cpp/src cpp/kernels setup.py -newer "$so" -type f 2>/dev/null | head -1)" ]; then
    stale=1
  fi
done
if [ -n "$stale" ]; then
  echo "setup: building the C++ extensions (a few minutes; compiler output in .venv/build.log) ..."
  if ! $VPY setup.py -q build_ext --inplace --force -j 2 > .venv/build.log 2>&1; then
    tail -n 40 .venv/build.log
    echo "setup: the build failed (whole log: .venv/build.log)" >&2
    exit 1
  fi
  stage "extensions built ($(grep -c 'warning:' .venv/build.log || true) compiler warnings)" "$t"
else
  stage "extensions up to date" "$t"
fi
# Make the checkout importable from the venv (the in-place build lives in it).
site=$($VPY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD" > "$site/minpy_jit_checkout.pth"
