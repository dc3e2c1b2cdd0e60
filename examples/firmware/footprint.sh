#!/usr/bin/env bash
# Builds the firmware images and prints each allocator's flash and RAM footprint: an image's size
# minus the bump-allocator baseline's (the same program), from `size -A`. Flash counts
# .vector_table, .text, .rodata and .data's initializers; RAM counts .data, .bss and .uninit
# (the 32 KiB .heap region, the same in every image, is left out).
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release --quiet

sections() { # image -> "flash ram"
  size -A "target/thumbv7em-none-eabihf/release/firmware-$1" | awk '
    $1 ~ /^\.(vector_table|text|rodata)$/ { flash += $2 }
    $1 == ".data" { flash += $2; ram += $2 }
    $1 ~ /^\.(bss|uninit)$/ { ram += $2 }
    END { print flash + 0, ram + 0 }'
}

read -r base_flash base_ram < <(sections bump)
printf '%-22s %12s %10s %14s %12s\n' image "flash (B)" "RAM (B)" "alloc flash" "alloc RAM"
for image in bump heapworks embedded-alloc-tlsf embedded-alloc-llff talc; do
  read -r flash ram < <(sections "$image")
  printf '%-22s %12d %10d %14d %12d\n' "$image" "$flash" "$ram" \
    $((flash - base_flash)) $((ram - base_ram))
done
