/* Fixed malloc sequences for instruction counts (under callgrind) and wall time.
 *   driver live1000 R   : R rounds of malloc(64) x1000 then free x1000 (after one warm-up round)
 *   driver pingpong N   : 1000 blocks live, then N times free(malloc(64)) in `pingpong_loop`
 *   driver realloc16 N  : one block grown by 16 B per realloc, N steps
 *   driver sizes        : free(malloc(n)) for n = 50 B .. 50 MB, ns per iteration (wall time)
 * Preload the allocator to measure; callgrind.sh runs them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIVE 1000
static void *volatile sink;
static void *blocks[LIVE];

__attribute__((noinline)) static void pingpong_loop(long n) {
    for (long i = 0; i < n; i++) {
        void *p = malloc(64);
        sink = p;
        free(p);
    }
}

static void live1000(long rounds) {
    for (long r = 0; r <= rounds; r++) {
        for (int i = 0; i < LIVE; i++) blocks[i] = malloc(64);
        for (int i = 0; i < LIVE; i++) free(blocks[i]);
    }
}

static void realloc16(long steps) {
    char *p = malloc(16);
    for (long i = 1; i <= steps; i++) {
        p = realloc(p, 16 + 16 * (size_t)i);
        p[16 * i] = (char)i;
    }
    free(p);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void sizes(void) {
    for (size_t n = 50; n <= 50000000; n *= 10) {
        long iterations = n >= 5000000 ? 2000 : 200000;
        double start = now();
        for (long i = 0; i < iterations; i++) {
            void *p = malloc(n);
            sink = p;
            free(p);
        }
        printf("%zu %.1f\n", n, (now() - start) / iterations);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    long n = argc > 2 ? atol(argv[2]) : 1000;
    for (int i = 0; i < LIVE; i++) blocks[i] = malloc(64);
    if (!strcmp(argv[1], "pingpong")) pingpong_loop(n);
    for (int i = 0; i < LIVE; i++) free(blocks[i]);
    if (!strcmp(argv[1], "live1000")) live1000(n);
    else if (!strcmp(argv[1], "realloc16")) realloc16(n);
    else if (!strcmp(argv[1], "sizes")) sizes();
    return 0;
}
