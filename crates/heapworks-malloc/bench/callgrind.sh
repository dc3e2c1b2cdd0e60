#!/bin/sh
# Instructions per call under callgrind for heapworks-malloc and the allocators installed
# (glibc always; Debian's libmimalloc2.0, libjemalloc2, libtcmalloc-minimal4 when present),
# then free(malloc(n)) wall time per size. Run from anywhere; builds the release .so.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${TMPDIR:-/tmp}/heapworks-malloc-bench
mkdir -p "$out"
cargo build --quiet --release -p heapworks-malloc --manifest-path "$root/Cargo.toml"
cc -O2 -o "$out/driver" "$here/driver.c"
lib=/usr/lib/x86_64-linux-gnu
set -- glibc: "heapworks:$root/target/release/libheapworks_malloc.so"
for peer in mimalloc:$lib/libmimalloc.so.2 jemalloc:$lib/libjemalloc.so.2 tcmalloc:$lib/libtcmalloc_minimal.so.4; do
    [ -e "${peer#*:}" ] && set -- "$@" "$peer"
done
# Function names each allocator's entry points go by (aliases differ).
mallocs="--toggle-collect=malloc --toggle-collect=mi_malloc --toggle-collect=tc_malloc --toggle-collect=je_malloc --toggle-collect=__libc_malloc"
frees="--toggle-collect=free --toggle-collect=mi_free --toggle-collect=tc_free --toggle-collect=je_free --toggle-collect=__libc_free --toggle-collect=cfree"
reallocs="--toggle-collect=realloc --toggle-collect=mi_realloc --toggle-collect=tc_realloc --toggle-collect=je_realloc --toggle-collect=__libc_realloc"
# Instructions counted by callgrind with the given toggles, for `driver <args>`.
count() {
    preload=$1; shift; toggles=$1; shift
    # shellcheck disable=SC2086
    LD_PRELOAD=$preload valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
        --collect-atstart=no $toggles "$out/driver" "$@" >/dev/null 2>&1
    awk '/^summary:|^totals:/ { print $2; exit }' "$out/cg.out"
}
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.1f", (b - a) / n }'; }
printf '%-10s %8s %8s %10s %10s\n' allocator malloc free ping-pong realloc+16
for entry in "$@"; do
    name=${entry%%:*}; preload=${entry#*:}
    # Differences between two run lengths cancel set-up costs.
    m1=$(count "$preload" "$mallocs" live1000 10); m2=$(count "$preload" "$mallocs" live1000 30)
    f1=$(count "$preload" "$frees" live1000 10); f2=$(count "$preload" "$frees" live1000 30)
    p1=$(count "$preload" "--toggle-collect=pingpong_loop" pingpong 10000)
    p2=$(count "$preload" "--toggle-collect=pingpong_loop" pingpong 30000)
    r1=$(count "$preload" "$reallocs" realloc16 2000); r2=$(count "$preload" "$reallocs" realloc16 6000)
    printf '%-10s %8s %8s %10s %10s\n' "$name" "$(per "$m1" "$m2" 20000)" "$(per "$f1" "$f2" 20000)" \
        "$(per "$p1" "$p2" 20000)" "$(per "$r1" "$r2" 4000)"
done
echo
echo "free(malloc(n)) ns per iteration (wall time, one run each)"
for entry in "$@"; do
    name=${entry%%:*}; preload=${entry#*:}
    printf '%-10s' "$name"
    LD_PRELOAD=$preload "$out/driver" sizes | awk '{ printf " %s:%s", $1, $2 } END { print "" }'
done
