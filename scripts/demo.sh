#!/usr/bin/env bash
# Sets everything up, then trains an MLP on scikit-learn's digits with and without jit().
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/env.sh
exec .venv/bin/python examples/train_digits.py "$@"
