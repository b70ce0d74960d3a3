#!/usr/bin/env bash
# Builds and runs the C++ recorder microbenchmark (no Python at run time).
#   bash cpp/bench/build.sh            # build + run
#   bash cpp/bench/build.sh 0.2        # shorter run (scales the number of rounds)
#   bash cpp/bench/build.sh 0.3 1000 3000 10000 30000 100000   # other sequence lengths
# Python is used only here, to locate the installed mxnet wheel (headers + libmxnet.so).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
MX="$("$PY" -c 'import mxnet,os;print(os.path.dirname(mxnet.__file__))' 2>/dev/null | tail -n1)"
[ -f "$MX/libmxnet.so" ] || { echo "libmxnet.so not found (mxnet dir: '$MX'); run scripts/demo.sh or set PYTHON" >&2; exit 1; }
OUT="$ROOT/build/bench"
mkdir -p "$OUT"
SRC="$ROOT/cpp/src"
g++ -O2 -std=c++17 -Wall -Wno-unused-parameter \
  -I"$MX/include" -I"$SRC" \
  "$HERE/bench_trace.cc" "$SRC/trace.cc" "$SRC/infer.cc" "$SRC/graph.cc" "$SRC/fuse.cc" "$SRC/rewrite.cc" "$SRC/peek.cc" "$SRC/executor.cc" "$SRC/explain.cc" \
  -L"$MX" -l:libmxnet.so -Wl,-rpath,"$MX" \
  -o "$OUT/bench_trace"
exec "$OUT/bench_trace" "$@"
