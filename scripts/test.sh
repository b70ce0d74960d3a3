#!/usr/bin/env bash
# Sets everything up (venv, dependencies, extension), then runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/env.sh
exec .venv/bin/python -m pytest -q tests "$@"
