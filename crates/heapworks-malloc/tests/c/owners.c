/* Thread-owned memory (tests/owners.rs, run with the library preloaded and HEAPWORKS_STATS=1):
 *
 *   owners churn   THREADS lanes of short-lived threads: each allocates blocks of 8 B to
 *                  64 KiB stamped with cookies, frees half, leaves the rest in a shared
 *                  exchange and exits; later threads (of any lane) check and free them: frees
 *                  of blocks whose owner has exited, over and over
 *   owners race    a thread allocates blocks, publishes them and exits at once, while other
 *                  threads free them as fast as they appear: remote frees racing the owner's
 *                  exit (and its arena's adoption by the next thread)
 *   owners adopt   a thread allocates and frees 4 MiB of small and medium blocks and exits; a
 *                  new thread allocating the same sizes gets mostly blocks in the same 64 KiB
 *                  ranges (its arena was adopted, not new memory): prints `reused <percent>`
 *   owners nextclass  the main thread allocates medium blocks, another thread frees them
 *                  (remote frees) and exits, then the main thread asks for a size of the class
 *                  below theirs: it gets those blocks back, not new ones: prints `reused
 *                  <percent>`
 *   owners handback  200 rounds: the main thread allocates 2048 blocks of 24 B to 2 KiB (slots,
 *                  small and medium blocks), a new thread frees them all (remote frees into the
 *                  arena of a live owner) and exits; prints `resident <KiB>`, the process's
 *                  resident set at the end, which stays flat when the owner reuses them
 *   owners fork    churn on worker threads while the main thread forks 50 times; each child
 *                  allocates, frees blocks the parent's threads made, and exits 0
 * Every block's cookie is checked before it is freed. Prints `<mode>: ok` and exits 0, or
 * exits 1 at the first failed check. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define LANES 8
#define PER_THREAD 256
#define EXCHANGE 4096

static uint64_t next_random(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* 8 B to 64 KiB, small sizes far more often. */
static size_t random_size(uint64_t *rng) {
    uint64_t r = next_random(rng);
    return 8 + (size_t)((r >> 8) % (8u << (r % 14)));
}

/* A block's cookie: its size and address mixed, in its first and last words. */
static uint64_t cookie(const unsigned char *p, size_t size) {
    return ((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15u) ^ size;
}

static unsigned char *stamped(size_t size) {
    if (size < 16) size = 16;
    unsigned char *p = malloc(size);
    CHECK(p != NULL);
    uint64_t c = cookie(p, size);
    memcpy(p, &c, 8);
    memcpy(p + size - 8, &c, 8);
    return p;
}

static void check_and_free(unsigned char *p, size_t size) {
    if (size < 16) size = 16;
    uint64_t c = cookie(p, size), first, last;
    memcpy(&first, p, 8);
    memcpy(&last, p + size - 8, 8);
    CHECK(first == c && last == c);
    free(p);
}

/* ---- a shared exchange of blocks ---- */

static struct {
    pthread_mutex_t lock;
    unsigned char *blocks[EXCHANGE];
    size_t sizes[EXCHANGE];
    size_t count;
} exchange = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0};

static int put(unsigned char *p, size_t size) {
    pthread_mutex_lock(&exchange.lock);
    int room = exchange.count < EXCHANGE;
    if (room) {
        exchange.blocks[exchange.count] = p;
        exchange.sizes[exchange.count++] = size;
    }
    pthread_mutex_unlock(&exchange.lock);
    return room;
}

static int take(unsigned char **p, size_t *size) {
    pthread_mutex_lock(&exchange.lock);
    int any = exchange.count > 0;
    if (any) {
        *p = exchange.blocks[--exchange.count];
        *size = exchange.sizes[exchange.count];
    }
    pthread_mutex_unlock(&exchange.lock);
    return any;
}

static void drain(void) {
    unsigned char *p;
    size_t size;
    while (take(&p, &size)) check_and_free(p, size);
}

/* ---- churn ---- */

static atomic_int stop;

static void *churn_thread(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg * 2654435761u + 1;
    unsigned char *blocks[PER_THREAD];
    size_t sizes[PER_THREAD];
    for (int i = 0; i < PER_THREAD; i++) blocks[i] = stamped(sizes[i] = random_size(&rng));
    for (int i = 0; i < PER_THREAD; i += 2) check_and_free(blocks[i], sizes[i]);
    for (int i = 0; i < PER_THREAD / 2; i++) {
        unsigned char *p;
        size_t size;
        if (!take(&p, &size)) break;
        check_and_free(p, size);
    }
    for (int i = 1; i < PER_THREAD; i += 2)
        if (!put(blocks[i], sizes[i])) check_and_free(blocks[i], sizes[i]);
    return NULL;
}

static void *churn_lane(void *arg) {
    uintptr_t lane = (uintptr_t)arg;
    for (uintptr_t round = 0; !atomic_load(&stop); round++) {
        pthread_t worker;
        CHECK(pthread_create(&worker, NULL, churn_thread, (void *)(lane * 100003 + round)) == 0);
        CHECK(pthread_join(worker, NULL) == 0);
    }
    return NULL;
}

static void churn_for(unsigned millis, int forks) {
    pthread_t lanes[LANES];
    for (uintptr_t i = 0; i < LANES; i++)
        CHECK(pthread_create(&lanes[i], NULL, churn_lane, (void *)i) == 0);
    if (forks == 0) {
        usleep(millis * 1000);
    } else {
        for (int f = 0; f < forks; f++) {
            usleep(millis * 1000 / forks);
            pid_t pid = fork();
            CHECK(pid >= 0);
            if (pid == 0) {
                /* The child's only thread: allocate, free what the parent's threads left. */
                uint64_t rng = 77 + (uint64_t)f;
                for (int i = 0; i < 2000; i++) {
                    size_t size = random_size(&rng);
                    check_and_free(stamped(size), size);
                }
                /* The exchange's lock may have been held by a thread the child lacks. */
                if (pthread_mutex_trylock(&exchange.lock) == 0) {
                    while (exchange.count > 0) {
                        exchange.count--;
                        check_and_free(exchange.blocks[exchange.count],
                                       exchange.sizes[exchange.count]);
                    }
                }
                _exit(0);
            }
            int status;
            CHECK(waitpid(pid, &status, 0) == pid);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < LANES; i++) CHECK(pthread_join(lanes[i], NULL) == 0);
    drain();
}

/* ---- race ---- */

#define RACE_BLOCKS 512
static _Atomic(unsigned char *) published[RACE_BLOCKS];
static size_t published_size[RACE_BLOCKS];

static void *publish_and_exit(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg + 1;
    for (int i = 0; i < RACE_BLOCKS; i++) {
        size_t size = random_size(&rng);
        unsigned char *p = stamped(size);
        published_size[i] = size;
        atomic_store(&published[i], p);
    }
    return NULL;
}

static void *free_published(void *arg) {
    int parity = (int)(uintptr_t)arg;
    for (int i = parity; i < RACE_BLOCKS; i += 2) {
        unsigned char *p;
        while (!(p = atomic_load(&published[i]))) sched_yield();
        check_and_free(p, published_size[i]);
    }
    return NULL;
}

static void race(void) {
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < RACE_BLOCKS; i++) atomic_store(&published[i], NULL);
        pthread_t freers[2], owner;
        for (uintptr_t k = 0; k < 2; k++)
            CHECK(pthread_create(&freers[k], NULL, free_published, (void *)k) == 0);
        CHECK(pthread_create(&owner, NULL, publish_and_exit, (void *)(uintptr_t)round) == 0);
        CHECK(pthread_join(owner, NULL) == 0);
        for (int k = 0; k < 2; k++) CHECK(pthread_join(freers[k], NULL) == 0);
    }
}

/* ---- adopt ---- */

#define ADOPT_BLOCKS 4096
static unsigned char *first_round[ADOPT_BLOCKS];


static size_t adopt_size(int i) { return 16 + (size_t)(i % 64) * 48; }

static void *allocate_and_free(void *record) {
    unsigned char *blocks[ADOPT_BLOCKS];
    for (int i = 0; i < ADOPT_BLOCKS; i++) blocks[i] = stamped(adopt_size(i));
    if (record) memcpy(first_round, blocks, sizeof blocks);
    for (int i = 0; i < ADOPT_BLOCKS; i++) check_and_free(blocks[i], adopt_size(i));
    return NULL;
}

static int compare(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static unsigned char *second_round[ADOPT_BLOCKS];

static void *allocate_and_keep(void *unused) {
    (void)unused;
    for (int i = 0; i < ADOPT_BLOCKS; i++) second_round[i] = stamped(adopt_size(i));
    return NULL;
}

static void adopt(void) {
    /* The main thread has its own arena already: the threads below get another. */
    free(stamped(100));
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, allocate_and_free, first_round) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(pthread_create(&thread, NULL, allocate_and_keep, NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    /* Memory reused: blocks of the second round in a 64 KiB range the first round used. */
    uintptr_t ranges[ADOPT_BLOCKS];
    for (int i = 0; i < ADOPT_BLOCKS; i++) ranges[i] = (uintptr_t)first_round[i] >> 16;
    qsort(ranges, ADOPT_BLOCKS, sizeof ranges[0], compare);
    int reused = 0;
    for (int i = 0; i < ADOPT_BLOCKS; i++) {
        uintptr_t range = (uintptr_t)second_round[i] >> 16;
        if (bsearch(&range, ranges, ADOPT_BLOCKS, sizeof ranges[0], compare)) reused++;
    }
    for (int i = 0; i < ADOPT_BLOCKS; i++) check_and_free(second_round[i], adopt_size(i));
    printf("reused %d\n", reused * 100 / ADOPT_BLOCKS);
}

/* ---- nextclass ---- */

#define NEXT_BLOCKS 32
/* Medium classes are an eighth of a power of two apart: 1200 B blocks are 1272 B (their class
 * is the third from 1 KiB), and a request of 1100 B is the class below's. */
#define RETURNED_SIZE 1200
#define ASKED_SIZE 1100

static unsigned char *returned[NEXT_BLOCKS];

static void *free_returned(void *unused) {
    (void)unused;
    for (int i = 0; i < NEXT_BLOCKS; i++) check_and_free(returned[i], RETURNED_SIZE);
    return NULL;
}

static void next_class(void) {
    for (int i = 0; i < NEXT_BLOCKS; i++) returned[i] = stamped(RETURNED_SIZE);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, free_returned, NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    unsigned char *asked[NEXT_BLOCKS];
    int reused = 0;
    for (int i = 0; i < NEXT_BLOCKS; i++) {
        asked[i] = stamped(ASKED_SIZE);
        for (int j = 0; j < NEXT_BLOCKS; j++) reused += asked[i] == returned[j];
    }
    for (int i = 0; i < NEXT_BLOCKS; i++) check_and_free(asked[i], ASKED_SIZE);
    printf("reused %d\n", reused * 100 / NEXT_BLOCKS);
}

#define HANDBACK_ROUNDS 200
#define HANDBACK_BLOCKS 2048

static unsigned char *handed[HANDBACK_BLOCKS];

static size_t handback_size(int i) { return 24 + (size_t)(i % 3) * ((size_t)(i % 7) * 300 + 100); }

static void *free_handed(void *unused) {
    (void)unused;
    for (int i = 0; i < HANDBACK_BLOCKS; i++) check_and_free(handed[i], handback_size(i));
    return NULL;
}

static void hand_back(void) {
    for (int round = 0; round < HANDBACK_ROUNDS; round++) {
        for (int i = 0; i < HANDBACK_BLOCKS; i++) handed[i] = stamped(handback_size(i));
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, free_handed, NULL) == 0);
        CHECK(pthread_join(thread, NULL) == 0);
    }
    long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    CHECK(statm != NULL && fscanf(statm, "%*ld %ld", &pages) == 1);
    fclose(statm);
    printf("resident %ld\n", pages * (sysconf(_SC_PAGESIZE) / 1024));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "churn")) {
        churn_for(1500, 0);
    } else if (!strcmp(mode, "race")) {
        race();
    } else if (!strcmp(mode, "adopt")) {
        adopt();
    } else if (!strcmp(mode, "nextclass")) {
        next_class();
    } else if (!strcmp(mode, "handback")) {
        hand_back();
    } else if (!strcmp(mode, "fork")) {
        churn_for(1500, 50);
    } else {
        fprintf(stderr, "usage: owners churn|race|adopt|nextclass|handback|fork\n");
        return 2;
    }
    printf("%s: ok\n", mode);
    return 0;
}
