#!/usr/bin/env bash
# Builds the C and C++ examples against heapworks-malloc installed under PREFIX (default
# /usr/local; crates/heapworks-malloc/install.sh), runs them, and checks that their malloc is
# heapworks': the dynamic linker binds malloc to libheapworks_malloc.so (LD_DEBUG=bindings), for
# the C++ program's libstdc++ too, and HEAPWORKS_STATS=1 prints heapworks' statistics at exit.
# Usage: examples/c/run.sh [PREFIX]
set -euo pipefail
prefix=${1:-/usr/local}
cd "$(dirname "$0")"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "pkg-config --cflags --libs heapworks: $(pkg-config --cflags --libs heapworks)"
make --no-print-directory OUT="$out"
for program in hello-c hello-cpp; do
  "$out/$program"
  bindings=$(LD_DEBUG=bindings "$out/$program" 2>&1 >/dev/null | grep "normal symbol \`malloc'")
  if grep -qv "libheapworks_malloc.so" <<<"$bindings"; then
    echo "$program: malloc is bound elsewhere than heapworks:" >&2
    grep -v "libheapworks_malloc.so" <<<"$bindings" >&2
    exit 1
  fi
  [ -n "$bindings" ] || { echo "$program: no binding of malloc seen" >&2; exit 1; }
  HEAPWORKS_STATS=1 "$out/$program" 2>&1 >/dev/null | grep -q "heapworks-malloc statistics" ||
    { echo "$program: HEAPWORKS_STATS=1 printed no heapworks statistics" >&2; exit 1; }
  echo "$program: every malloc binding ($(wc -l <<<"$bindings")) goes to libheapworks_malloc.so; HEAPWORKS_STATS=1 reports"
done
