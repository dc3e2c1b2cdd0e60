/* The per-thread caches of medium blocks and large mappings, for tests/caches.rs (run with the
 * library preloaded and HEAPWORKS_STATS=1, whose report the test reads).
 *
 *   caches loops    free(malloc(n)) 10000 times each for n = 5 KB, 50 KB, 200 KB, 500 KB, 5 MB
 *   caches bounded  frees 3000 medium blocks of mixed sizes; the cache keeps few of them
 *   caches exit     a thread frees medium blocks of mixed sizes and exits; its cache goes back
 *   caches split    a freed 16 MiB block serves two 8 MiB requests, then one of 16 MiB again
 *   caches varying  100 blocks of 5 to 25 MiB, every page touched; prints `faults <minor page
 *                   faults> maxrss <peak RSS in KiB>` for the loop
 *   caches growth   three 4 MiB blocks touched and freed (kept mapped), then 24 MiB of 2 KiB
 *                   blocks touched (the central heap grows); prints `maxrss <peak RSS in KiB>`
 *   caches crowd N  N threads start their caches and wait; meanwhile another thread allocates
 *                   and frees 8 blocks of 2 KiB ten times over (its cache starts while N + 2
 *                   threads run)
 *   caches mixed    100000 steps over 64 slots: free a random slot's block, allocate one of
 *                   1 to 4 KiB (random) there, as threads.c's mixed workload does with its
 *                   medium sizes; prints `steps <medium mallocs>`
 * Prints `<mode>: ok` and exits 0, or exits 1 at the first failed check. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"

#define MEDIUM_BLOCKS 3000

static void *volatile sink;

static void loops(void) {
    static const size_t sizes[] = {5000, 50000, 200000, 500000, 5000000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        for (int i = 0; i < 10000; i++) {
            void *p = malloc(sizes[s]);
            CHECK(p);
            sink = p;
            free(p);
        }
    }
}

/* Sizes from 1 KiB to about 200 KiB, spread over the medium bins. */
static size_t medium_size(unsigned i) {
    return 1024 + (size_t)(i * 2654435761u % 200000u);
}

static void *allocate_and_free_medium(void *unused) {
    (void)unused;
    static char *blocks[MEDIUM_BLOCKS];
    for (unsigned i = 0; i < MEDIUM_BLOCKS; i++) {
        blocks[i] = malloc(medium_size(i));
        CHECK(blocks[i]);
        blocks[i][0] = blocks[i][medium_size(i) - 1] = (char)i;
    }
    for (unsigned i = 0; i < MEDIUM_BLOCKS; i++) free(blocks[i]);
    return NULL;
}

static void on_exit_of_thread(void) {
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, allocate_and_free_medium, NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
}

#define CROWD_MAX 64

static pthread_barrier_t crowd_started, crowd_done;

static void *crowd_member(void *unused) {
    (void)unused;
    sink = malloc(16);
    free(sink);
    pthread_barrier_wait(&crowd_started);
    pthread_barrier_wait(&crowd_done);
    return NULL;
}

static void *reuse_medium_blocks(void *unused) {
    (void)unused;
    char *blocks[8];
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 8; i++) {
            blocks[i] = malloc(2048);
            CHECK(blocks[i]);
            blocks[i][0] = blocks[i][2047] = (char)i;
        }
        for (int i = 0; i < 8; i++) free(blocks[i]);
    }
    return NULL;
}

static void crowd(unsigned members) {
    CHECK(members <= CROWD_MAX);
    pthread_t threads[CROWD_MAX], worker;
    CHECK(pthread_barrier_init(&crowd_started, NULL, members + 1) == 0);
    CHECK(pthread_barrier_init(&crowd_done, NULL, members + 1) == 0);
    for (unsigned i = 0; i < members; i++)
        CHECK(pthread_create(&threads[i], NULL, crowd_member, NULL) == 0);
    pthread_barrier_wait(&crowd_started);
    CHECK(pthread_create(&worker, NULL, reuse_medium_blocks, NULL) == 0);
    CHECK(pthread_join(worker, NULL) == 0);
    pthread_barrier_wait(&crowd_done);
    for (unsigned i = 0; i < members; i++) CHECK(pthread_join(threads[i], NULL) == 0);
}

static void split(void) {
    const size_t half = 8 << 20;
    char *big = malloc(2 * half);
    CHECK(big);
    memset(big, 1, 2 * half);
    free(big);
    char *first = malloc(half), *second = malloc(half);
    CHECK(first && second);
    CHECK(malloc_usable_size(first) <= half + half / 8);
    CHECK(first + half <= second || second + half <= first);
    memset(first, 2, half);
    memset(second, 3, half);
    first = realloc(first, half + half / 2);
    CHECK(first && first[half - 1] == 2);
    free(first);
    free(second);
    char *whole = malloc(2 * half);
    CHECK(whole);
    memset(whole, 4, 2 * half);
    free(whole);
}

static void varying(void) {
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    unsigned state = 1;
    for (int i = 0; i < 100; i++) {
        state = state * 1103515245u + 12345u;
        size_t size = (5u << 20) + (state >> 8) % (20u << 20);
        char *p = malloc(size);
        CHECK(p);
        for (size_t k = 0; k < size; k += 4096) p[k] = (char)i;
        p[size - 1] = (char)i;
        free(p);
    }
    getrusage(RUSAGE_SELF, &after);
    printf("faults %ld maxrss %ld\n", after.ru_minflt - before.ru_minflt, after.ru_maxrss);
}

/* Freed large mappings wait for reuse; a heap that grows instead takes their place. */
static void growth(void) {
    enum { LARGE = 4 << 20, SMALL = 2048, SMALLS = (24 << 20) / SMALL };
    char *large[3];
    for (int i = 0; i < 3; i++) {
        large[i] = malloc(LARGE);
        CHECK(large[i]);
        memset(large[i], i + 1, LARGE);
    }
    for (int i = 0; i < 3; i++) free(large[i]);
    static char *smalls[SMALLS];
    for (int i = 0; i < SMALLS; i++) {
        smalls[i] = malloc(SMALL);
        CHECK(smalls[i]);
        memset(smalls[i], (char)i, SMALL);
    }
    for (int i = 0; i < SMALLS; i++) {
        CHECK(smalls[i][SMALL - 1] == (char)i);
        free(smalls[i]);
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("maxrss %ld\n", usage.ru_maxrss);
}

/* Medium blocks of random sizes freed and allocated by one thread, each checked. */
static void mixed(void) {
    enum { SLOTS = 64, STEPS = 100000 };
    static unsigned char *slots[SLOTS];
    static size_t sizes[SLOTS];
    uint64_t state = 42;
    for (int step = 0; step < STEPS; step++) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        size_t slot = (size_t)(state >> 33) % SLOTS;
        if (slots[slot]) {
            CHECK(slots[slot][0] == (unsigned char)slot);
            CHECK(slots[slot][sizes[slot] - 1] == (unsigned char)slot);
            free(slots[slot]);
        }
        state = state * 6364136223846793005u + 1442695040888963407u;
        sizes[slot] = 1024 + (size_t)(state >> 33) % 3073;
        slots[slot] = malloc(sizes[slot]);
        CHECK(slots[slot] && malloc_usable_size(slots[slot]) >= sizes[slot]);
        slots[slot][0] = slots[slot][sizes[slot] - 1] = (unsigned char)slot;
    }
    for (size_t slot = 0; slot < SLOTS; slot++) free(slots[slot]);
    printf("steps %d\n", STEPS);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (!strcmp(argv[1], "loops")) loops();
    else if (!strcmp(argv[1], "bounded")) allocate_and_free_medium(NULL);
    else if (!strcmp(argv[1], "exit")) on_exit_of_thread();
    else if (!strcmp(argv[1], "split")) split();
    else if (!strcmp(argv[1], "varying")) varying();
    else if (!strcmp(argv[1], "mixed")) mixed();
    else if (!strcmp(argv[1], "crowd") && argc > 2) crowd((unsigned)atoi(argv[2]));
    else if (!strcmp(argv[1], "growth")) growth();
    else return 2;
    printf("%s: ok\n", argv[1]);
    return 0;
}
