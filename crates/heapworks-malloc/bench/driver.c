/* Fixed malloc sequences of `heapworks bench --malloc`, run with the allocator under test
 * LD_PRELOADed (glibc's when nothing is preloaded).
 *
 *   driver counts ROUNDS PINGPONG STEPS   under callgrind: instructions per call
 *   driver sizes ITERATIONS               wall time of free(malloc(n)), n = 50 B .. 50 MB
 *
 * `counts` runs every sequence once to warm up, through functions named warm_*, then again
 * through functions named measured_*, which callgrind's profile tells apart:
 *   measured_fill / measured_empty   ROUNDS x (malloc(64) x 1000, then free x 1000)
 *   pingpong_loop                    PINGPONG x free(malloc(64)) with 1000 blocks live
 *   measured_grow                    STEPS reallocs of one block, 16 B larger each time,
 *                                    after as many warm-up steps as half of STEPS
 * The bench divides the inclusive cost of the calls out of measured_fill, measured_empty and
 * measured_grow by their number, and pingpong_loop's whole inclusive cost (loop included) by
 * PINGPONG. Build with -fno-ipa-icf so that the warm and measured twins stay two functions.
 *
 * `sizes` prints one line per size, `<n> <ns per iteration>`; blocks of 5 MB and more take a
 * hundredth of ITERATIONS (at least 10). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

NOINLINE void pingpong_loop(long n) {
    for (long i = 0; i < n; i++) {
        void *p = malloc(64);
        sink = p;
        free(p);
    }
}

static void counts(long rounds, long pingpong, long steps) {
    warm_fill();
    warm_empty();
    for (long r = 0; r < rounds; r++) {
        measured_fill();
        measured_empty();
    }
    fill();
    pingpong_loop(pingpong);
    empty();
    char *p = malloc(16);
    p = warm_grow(p, 1, 1 + steps / 2);
    p = measured_grow(p, 1 + steps / 2, 1 + steps / 2 + steps);
    free(p);
    printf("ok\n");
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

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "counts")) {
        counts(atol(argv[2]), atol(argv[3]), atol(argv[4]));
    } else if (argc == 3 && !strcmp(argv[1], "sizes")) {
        sizes(atol(argv[2]));
    } else {
        fprintf(stderr, "usage: driver counts ROUNDS PINGPONG STEPS | driver sizes ITERATIONS\n");
        return 2;
    }
    return 0;
}
