/* What the thread workloads (threads.c, scaling.c) share: a monotonic clock, a seeded random
 * sequence per thread, and the block sizes they draw. Header-only: each program is compiled
 * from its one .c file. */
#ifndef HEAPWORKS_WORKLOAD_H
#define HEAPWORKS_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* SplitMix64: each thread's sequence is fixed by the seed. */
static inline uint64_t next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* 8 B to 4 KiB, small sizes far more often: 8 + rand % (8 << rand % 10). */
static inline size_t mixed_size(uint64_t *state) {
    uint64_t r = next(state);
    return 8 + (size_t)((r >> 8) % (8u << (r % 10)));
}

#endif
