#!/usr/bin/env bash
# OPTIONAL: creates .venv-bench with the benchmark peers of requirements-bench.txt (PyTorch,
# JAX; CPU builds). A separate venv because mxnet 1.9.1 (.venv) needs numpy<1.24 and current
# JAX a newer one. benchmarks/run_all.py uses .venv-bench/bin/python when it exists.
# Idempotent: reinstalls only when requirements-bench.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv-bench/bin/python ]; then
  "$PY" -m venv .venv-bench
fi
VPY=.venv-bench/bin/python
stamp=.venv-bench/.deps-installed
if [ ! -f "$stamp" ] || [ requirements-bench.txt -nt "$stamp" ]; then
  $VPY -m pip install -q --upgrade pip
  $VPY -m pip install -q -r requirements-bench.txt
  touch "$stamp"
fi
$VPY -c 'import numpy, torch, jax; print("bench peers: numpy %s, torch %s, jax %s (%s)" % (
    numpy.__version__, torch.__version__, jax.__version__, jax.devices()[0].platform))'
