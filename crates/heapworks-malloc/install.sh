#!/usr/bin/env bash
# Builds heapworks-malloc (cargo's `malloc` profile) and installs it under a prefix, for C and C++
# builds to find by pkg-config:
#   PREFIX/lib/libheapworks_malloc.so, PREFIX/lib/libheapworks_malloc.a,
#   PREFIX/include/heapworks.h, PREFIX/lib/pkgconfig/heapworks.pc
#
# Usage: install.sh [--prefix DIR] [--libdir DIR] [--destdir DIR] [--uninstall]
#   --prefix   where to install (default /usr/local)
#   --libdir   the library directory (default PREFIX/lib)
#   --destdir  stage under DIR, as packagers do (the .pc file still names PREFIX)
#   --uninstall  remove the four files instead (nothing else is touched)
# The .pc file links the library with --no-as-needed: a program that never calls malloc itself
# (C++ allocates through libstdc++) must still load it, or nothing is replaced.
# Then: cc prog.c $(pkg-config --cflags --libs heapworks)
set -euo pipefail

prefix=/usr/local
libdir=
destdir=
uninstall=false
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --libdir) libdir=${2:?--libdir needs a directory}; shift 2 ;;
    --destdir) destdir=${2:?--destdir needs a directory}; shift 2 ;;
    --uninstall) uninstall=true; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) echo "install.sh: --prefix must be an absolute path, got '$prefix'" >&2; exit 2 ;; esac
libdir=${libdir:-$prefix/lib}
includedir=$prefix/include
pcdir=$libdir/pkgconfig

files=("$libdir/libheapworks_malloc.so" "$libdir/libheapworks_malloc.a"
  "$includedir/heapworks.h" "$pcdir/heapworks.pc")

if $uninstall; then
  for f in "${files[@]}"; do
    rm -fv -- "$destdir$f"
  done
  exit 0
fi

crate=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$crate/../.." && pwd)
(cd "$repo" && cargo build --profile malloc -p heapworks-malloc)
built=${CARGO_TARGET_DIR:-$repo/target}/malloc
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$crate/Cargo.toml" | head -n1)

install -Dm755 "$built/libheapworks_malloc.so" "$destdir$libdir/libheapworks_malloc.so"
install -Dm644 "$built/libheapworks_malloc.a" "$destdir$libdir/libheapworks_malloc.a"
install -Dm644 "$crate/include/heapworks.h" "$destdir$includedir/heapworks.h"
mkdir -p "$destdir$pcdir"
cat > "$destdir$pcdir/heapworks.pc" <<PC
prefix=$prefix
libdir=$libdir
includedir=$includedir

Name: heapworks
Description: heapworks-malloc, a drop-in C malloc over the heapworks engine
Version: $version
Libs: -L\${libdir} -Wl,--push-state,--no-as-needed -lheapworks_malloc -Wl,--pop-state
Cflags: -I\${includedir}
PC
for f in "${files[@]}"; do
  echo "installed $destdir$f"
done
