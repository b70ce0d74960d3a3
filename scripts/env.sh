#!/usr/bin/env bash
# Creates .venv (if needed), installs the pinned dependencies and builds the
# extension. Idempotent: safe to run before every demo or test run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
stamp=.venv/.deps-installed
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
  $VPY -m pip install -q --upgrade pip setuptools wheel
  $VPY -m pip install -q -r requirements.txt
  touch "$stamp"
fi
# Build the extensions in place (the recorder _core and the kernel library _kernels) when
# either is missing or any C++ source is newer than it.
stale=""
for mod in _core _kernels; do
  so=$(ls minpy_jit/$mod*.so 2>/dev/null | head -1 || true)
  if [ -z "$so" ] || [ -n "$(find cpp/src cpp/kernels setup.py -newer "$so" -type f 2>/dev/null | head -1)" ]; then
    stale=1
  fi
done
if [ -n "$stale" ]; then
  $VPY setup.py -q build_ext --inplace --force -j 2
fi
# Make the checkout importable from the venv (the in-place build lives in it).
site=$($VPY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD" > "$site/minpy_jit_checkout.pth"
