#!/usr/bin/env bash
# Builds and runs the C++ recorder microbenchmark (no Python code runs; an embedded interpreter
# exists because the runtime releases the GIL around MXNet calls).
#   bash cpp/bench/build.sh            # build + run
#   bash cpp/bench/build.sh 0.2        # shorter run (scales the number of rounds)
#   bash cpp/bench/build.sh 0.3 1000 3000 10000 30000 100000   # other sequence lengths
# Python is used here to locate the installed mxnet wheel (headers + libmxnet.so), pybind11's
# headers and libpython.
set -euo pipefail
OBJS_TO_BUILD=()
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
MX="$("$PY" -c 'import mxnet,os;print(os.path.dirname(mxnet.__file__))' 2>/dev/null | tail -n1)"
[ -f "$MX/libmxnet.so" ] || { echo "libmxnet.so not found (mxnet dir: '$MX'); run scripts/demo.sh or set PYTHON" >&2; exit 1; }
OUT="$ROOT/build/bench"
mkdir -p "$OUT/obj"
SRC="$ROOT/cpp/src"
# The recorder's files call into the rest of the runtime (its configuration, the GIL released
# around MXNet calls), so the bench links all of cpp/src but bindings.cc (the Python module's
# entry point) and embeds an interpreter that is never asked to run Python code.
PYINC="$("$PY" -c 'import sysconfig;print(sysconfig.get_paths()["include"])')"
PYBIND="$("$PY" -c 'import pybind11;print(pybind11.get_include())')"
PYLIBDIR="$("$PY" -c 'import sysconfig;print(sysconfig.get_config_var("LIBDIR"))')"
PYLIB="$("$PY" -c 'import sysconfig;print("python" + sysconfig.get_config_var("LDVERSION"))')"
FLAGS=(-O2 -std=c++17 -fvisibility=hidden -Wall -Wno-unused-parameter -Wno-unknown-pragmas -I"$MX/include" -I"$SRC" -I"$PYINC" -I"$PYBIND")
OBJS=()
for f in "$SRC"/*.cc; do
  [ "$(basename "$f")" = bindings.cc ] && continue
  o="$OUT/obj/$(basename "$f" .cc).o"
  if [ ! -f "$o" ] || [ "$f" -nt "$o" ] || [ -n "$(find "$SRC" -name '*.h' -newer "$o" -print -quit)" ]; then
    OBJS_TO_BUILD+=("$f")
  fi
  OBJS+=("$o")
done
# two compilers at a time (the machines have 2 cores)
printf '%s\n' "${OBJS_TO_BUILD[@]:-}" | grep . | xargs -r -P 2 -I{} sh -c 'g++ "$@" -c "{}" -o "'"$OUT"'/obj/$(basename "{}" .cc).o"' _ "${FLAGS[@]}"
g++ "${FLAGS[@]}" "$HERE/bench_trace.cc" "${OBJS[@]}" \
  -L"$MX" -l:libmxnet.so -Wl,-rpath,"$MX" -L"$PYLIBDIR" -l"$PYLIB" -Wl,-rpath,"$PYLIBDIR" -lpthread -ldl \
  -o "$OUT/bench_trace"
exec "$OUT/bench_trace" "$@"
