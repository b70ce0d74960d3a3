#!/usr/bin/env bash
# Sets everything up, then trains an MLP on scikit-learn's digits eagerly, under jit() and as an @minpy_jit.function.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/env.sh
exec .venv/bin/python examples/train_digits.py "$@"
