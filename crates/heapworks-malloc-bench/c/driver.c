/* Fixed malloc sequences of `heapworks bench --malloc`, run with the allocator under test
 * LD_PRELOADed (glibc's when nothing is preloaded).
 *
 *   driver counts live1000 ROUNDS      under callgrind: instructions per malloc and free
 *   driver counts pingpong ITERATIONS  under callgrind: instructions per malloc+free pair
 *   driver counts realloc16 STEPS      under callgrind: instructions per realloc step
 *   driver sizes ITERATIONS            wall time of free(malloc(n)), n = 50 B .. 50 MB
 *
 * Every `counts` sequence runs in a fresh process, after 1000 blocks of 64 B were allocated
 * (the ping-pong runs while they are live) and freed. It warms up through functions named
 * warm_*, then runs through functions named measured_*, which callgrind's profile tells
 * apart:
 *   live1000    ROUNDS x (malloc(64) x 1000 in measured_fill, then free x 1000 in
 *               measured_empty), after one warm-up round
 *   pingpong    ITERATIONS x free(malloc(64)) in pingpong_loop, after a tenth as many
 *   realloc16   STEPS reallocs of one block in measured_grow, 16 B larger each time, after
 *               half as many warm-up steps
 * The bench divides the inclusive cost of the calls out of measured_fill, measured_empty and
 * measured_grow by their number, and pingpong_loop's whole inclusive cost (loop included) by
 * ITERATIONS. Build with -fno-ipa-icf so that the warm and measured twins stay apart.
 *
 * `sizes` prints one line per size, `<n> <ns per iteration>`; blocks of 5 MB and more take a
 * hundredth of ITERATIONS (at least 10).
 *
 *   driver large STEPS                 malloc-large's pattern: 20 blocks live, each step
 *                                      frees a random one and allocates 5 to 25 MiB there,
 *                                      writing a byte of every page; prints `ns <per step>`,
 *                                      `faults <minor faults per step>` and `system_ns <system
 *                                      time per step>` (getrusage) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define LIVE 1000
#define NOINLINE __attribute__((noinline))
#define INLINE static inline __attribute__((always_inline))

static void *volatile sink;
static void *blocks[LIVE];

INLINE void fill(void) {
    for (int i = 0; i < LIVE; i++) blocks[i] = malloc(64);
}

INLINE void empty(void) {
    for (int i = 0; i < LIVE; i++) free(blocks[i]);
}

INLINE char *grow(char *p, long from, long to) {
    for (long i = from; i < to; i++) {
        p = realloc(p, 16 + 16 * (size_t)i);
        p[16 * i] = (char)i;
    }
    return p;
}

NOINLINE void warm_fill(void) { fill(); }
NOINLINE void warm_empty(void) { empty(); }
NOINLINE void measured_fill(void) { fill(); }
NOINLINE void measured_empty(void) { empty(); }
NOINLINE char *warm_grow(char *p, long from, long to) { return grow(p, from, to); }
NOINLINE char *measured_grow(char *p, long from, long to) { return grow(p, from, to); }

INLINE void pingpong(long n) {
    for (long i = 0; i < n; i++) {
        void *p = malloc(64);
        sink = p;
        free(p);
    }
}

NOINLINE void warm_pingpong(long n) { pingpong(n); }
NOINLINE void pingpong_loop(long n) { pingpong(n); }

/* Runs one `counts` sequence of length n; returns 0, or 2 for an unknown sequence. */
static int counts(const char *sequence, long n) {
    fill();
    if (!strcmp(sequence, "pingpong")) {
        warm_pingpong(n / 10);
        pingpong_loop(n);
    }
    empty();
    if (!strcmp(sequence, "live1000")) {
        warm_fill();
        warm_empty();
        for (long r = 0; r < n; r++) {
            measured_fill();
            measured_empty();
        }
    } else if (!strcmp(sequence, "realloc16")) {
        char *p = malloc(16);
        p = warm_grow(p, 1, 1 + n / 2);
        p = measured_grow(p, 1 + n / 2, 1 + n / 2 + n);
        free(p);
    } else if (strcmp(sequence, "pingpong")) {
        return 2;
    }
    printf("ok\n");
    return 0;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void sizes(long iterations) {
    for (size_t n = 50; n <= 50000000; n *= 10) {
        long count = n >= 5000000 ? iterations / 100 : iterations;
        if (count < 10) count = 10;
        double start = now_ns();
        for (long i = 0; i < count; i++) {
            void *p = malloc(n);
            sink = p;
            free(p);
        }
        printf("%zu %.2f\n", n, (now_ns() - start) / count);
    }
}

#define LARGE_LIVE 20

static void large(long steps) {
    static char *live[LARGE_LIVE];
    unsigned long long state = 0x9E3779B97F4A7C15ull;
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    double start = now_ns();
    for (long i = 0; i < steps; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        int slot = (int)((state >> 33) % LARGE_LIVE);
        size_t n = (5u << 20) + (size_t)((state >> 13) % (20u << 20));
        free(live[slot]);
        char *p = malloc(n);
        if (!p) abort();
        for (size_t at = 0; at < n; at += 4096) p[at] = (char)i;
        live[slot] = p;
    }
    double elapsed = now_ns() - start;
    getrusage(RUSAGE_SELF, &after);
    for (int slot = 0; slot < LARGE_LIVE; slot++) free(live[slot]);
    double system_ns = (after.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1e9 +
                       (after.ru_stime.tv_usec - before.ru_stime.tv_usec) * 1e3;
    printf("ns %.0f\nfaults %.1f\nsystem_ns %.0f\n", elapsed / steps,
           (double)(after.ru_minflt - before.ru_minflt) / steps, system_ns / steps);
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "counts") && !counts(argv[2], atol(argv[3]))) return 0;
    if (argc == 3 && !strcmp(argv[1], "sizes")) {
        sizes(atol(argv[2]));
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "large")) {
        large(atol(argv[2]));
        return 0;
    }
    fprintf(stderr,
            "usage: driver counts live1000|pingpong|realloc16 N | driver sizes N | driver large N\n");
    return 2;
}
