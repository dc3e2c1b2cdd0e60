/* Slots: tiny blocks (requests of at most 128 bytes, served by headerless slots) and promoted
 * classes (requests of 129 to 376 bytes, served by slots once their class has carved 16 KiB
 * from the core heap), for tests/tiny.rs (run with the library preloaded and HEAPWORKS_STATS=1,
 * whose report the test reads).
 *
 *   tiny shape    every size 0 to 128: 16-byte alignment, usable size (the slot's), blocks that
 *                 do not overlap, realloc within the slot and out of it, calloc of dirty slots
 *   tiny fallback the same with core blocks (at least the size asked for), when the slots'
 *                 region cannot be had: a page of it is mapped before the first malloc
 *   tiny threads  one thread allocates, another frees (and exits); a forked child allocates and
 *                 frees the parent's blocks
 *   tiny reuse    1.6 million blocks allocated and freed twice; prints `rss <KiB> <KiB> <KiB>`
 *                 (resident after the first round's allocations, after its frees, at exit)
 *   tiny promoted sizes 129 to 1016, 300 blocks each: core blocks (usable size 8 more than
 *                 a multiple of 16) until the class is promoted, then slots (the class's size,
 *                 a multiple of 16) for sizes up to 376 only; the blocks do not overlap; realloc
 *                 across the tiny, promoted and core boundaries keeps the contents; another
 *                 thread and a forked child free promoted slots (and the core blocks of their
 *                 classes carved before), which serve again
 *   tiny batches  a thread allocates blocks of a tiny and a promoted size, frees them all
 *                 (its full lists go back as batches) and exits; a new thread, which adopts its
 *                 memory and whose lists are shorter, does as much (taking the batches whole or
 *                 in part): every block is its size's slot, the blocks do not overlap, and each
 *                 keeps what was written
 * Prints `<mode>: ok` and exits 0, or exits 1 at the first failed check. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define PER_SIZE 2000
#define SLOT_MAX 128
#define HANDED 200000
#define REUSE 1600000

static size_t slot_of(size_t n) { return n <= 16 ? 16 : (n + 15) / 16 * 16; }

/* Whether blocks are slots (usable size exactly the slot's) or core blocks (at least that). */
static int exact = 1;

/* Maps a page where the library places its slots' region (16 TiB), which it then cannot
 * have: it never replaces a mapping. */
static void occupy_slot_region(void) {
    void *hint = (void *)0x100000000000;
    void *page = mmap(hint, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                      -1, 0);
    CHECK(page == hint);
}

static void shape(void) {
    static unsigned char *blocks[PER_SIZE];
    for (size_t n = 0; n <= SLOT_MAX; n++) {
        for (int i = 0; i < PER_SIZE; i++) {
            unsigned char *p = malloc(n);
            CHECK(p != NULL);
            CHECK((uintptr_t)p % 16 == 0);
            size_t usable = malloc_usable_size(p);
            CHECK(exact ? usable == slot_of(n) : usable >= slot_of(n));
            memset(p, (int)(i & 0xff), slot_of(n));
            blocks[i] = p;
        }
        for (int i = 0; i < PER_SIZE; i++)
            for (size_t k = 0; k < slot_of(n); k++)
                CHECK(blocks[i][k] == (unsigned char)(i & 0xff));
        for (int i = 0; i < PER_SIZE; i++) free(blocks[i]);
    }
    /* realloc keeps a block within its slot and moves it, contents kept, beyond (a core block,
     * in fallback mode, may also grow in place into a free neighbour). */
    unsigned char *p = malloc(10);
    memcpy(p, "0123456789", 10);
    CHECK(realloc(p, 16) == p);
    unsigned char *q = realloc(p, 40);
    CHECK(q != NULL && (!exact || q != p) && memcmp(q, "0123456789", 10) == 0);
    CHECK(exact ? malloc_usable_size(q) == 48 : malloc_usable_size(q) >= 40);
    CHECK(realloc(q, 48) == q);
    unsigned char *w = realloc(q, 120);
    CHECK(w != NULL && (!exact || w != q) && memcmp(w, "0123456789", 10) == 0);
    CHECK(exact ? malloc_usable_size(w) == 128 : malloc_usable_size(w) >= 120);
    CHECK(realloc(w, 128) == w);
    unsigned char *r = realloc(w, 1000);
    CHECK(r != NULL && memcmp(r, "0123456789", 10) == 0);
    CHECK(malloc_usable_size(r) >= 1000);
    unsigned char *s = realloc(r, 20);
    CHECK(s != NULL && memcmp(s, "0123456789", 10) == 0);
    free(s);
    /* calloc hands out slots just freed dirty, zeroed. */
    for (size_t n = 1; n <= SLOT_MAX; n++) {
        for (int i = 0; i < 64; i++) {
            blocks[i] = malloc(n);
            memset(blocks[i], 0xff, slot_of(n));
        }
        for (int i = 0; i < 64; i++) free(blocks[i]);
        for (int i = 0; i < 64; i++) {
            unsigned char *z = calloc(1, n);
            CHECK(z != NULL && (uintptr_t)z % 16 == 0);
            for (size_t k = 0; k < n; k++) CHECK(z[k] == 0);
            blocks[i] = z;
        }
        for (int i = 0; i < 64; i++) free(blocks[i]);
    }
    free(NULL);
}

static unsigned char *handed[HANDED];

static void *free_handed(void *unused) {
    (void)unused;
    for (int i = 0; i < HANDED; i++) {
        CHECK(handed[i][0] == (unsigned char)i);
        free(handed[i]);
    }
    return NULL;
}

static void threads(void) {
    for (int i = 0; i < HANDED; i++) {
        handed[i] = malloc((size_t)(i % SLOT_MAX) + 1);
        handed[i][0] = (unsigned char)i;
    }
    pthread_t freer;
    CHECK(pthread_create(&freer, NULL, free_handed, NULL) == 0);
    CHECK(pthread_join(freer, NULL) == 0);
    /* The slots the other thread freed serve this one again. */
    for (int i = 0; i < HANDED; i++) {
        handed[i] = malloc((size_t)(i % SLOT_MAX) + 1);
        handed[i][0] = (unsigned char)i;
    }
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        for (int i = 0; i < HANDED; i++) {
            CHECK(handed[i][0] == (unsigned char)i);
            free(handed[i]);
            handed[i] = malloc(8);
        }
        for (int i = 0; i < HANDED; i++) free(handed[i]);
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < HANDED; i++) free(handed[i]);
}

static long resident_kib(void) {
    long pages = 0, resident = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    CHECK(statm != NULL && fscanf(statm, "%ld %ld", &pages, &resident) == 2);
    fclose(statm);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void reuse(void) {
    static void *blocks[REUSE];
    long peak = 0, after_free = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < REUSE; i++) {
            blocks[i] = malloc(16);
            memset(blocks[i], 1, 16);
        }
        if (round == 0) peak = resident_kib();
        for (int i = 0; i < REUSE; i++) free(blocks[i]);
        if (round == 0) after_free = resident_kib();
    }
    printf("rss %ld %ld %ld\n", peak, after_free, resident_kib());
}

#define PROMOTED_MAX 376 /* the largest request of the last promotable class (384 B) */
#define SMALL_MAX 1016    /* the largest request the thread caches serve */
#define PER_CLASS 300

static size_t class_bytes(size_t n) { return (n + 8 + 15) / 16 * 16; }

/* The sizes tried: every one up to 400 (the promotable classes and past them), then every 23rd
 * and the largest (27 MiB of blocks in all). */
static size_t next_size(size_t n) {
    if (n < 400) return n + 1;
    return n < SMALL_MAX && n + 23 > SMALL_MAX ? SMALL_MAX : n + 23;
}

static unsigned char *promoted_blocks[SMALL_MAX + 1][PER_CLASS];

/* Fills block `i` of size `n` with a pattern naming both, and checks its first `len` bytes. */
static void fill(unsigned char *p, size_t n, int i) { memset(p, (int)((n + (size_t)i) & 0xff), n); }
static void check_prefix(const unsigned char *p, size_t len, size_t n, int i) {
    for (size_t k = 0; k < len; k++) CHECK(p[k] == (unsigned char)((n + (size_t)i) & 0xff));
}
static void check_fill(const unsigned char *p, size_t n, int i) { check_prefix(p, n, n, i); }

static void *free_promoted(void *unused) {
    (void)unused;
    for (size_t n = SLOT_MAX + 1; n <= PROMOTED_MAX; n++)
        for (int i = 0; i < PER_CLASS; i += 2) {
            check_fill(promoted_blocks[n][i], n, i);
            free(promoted_blocks[n][i]);
        }
    return NULL;
}

static void promoted(void) {
    for (size_t n = SLOT_MAX + 1; n <= SMALL_MAX; n = next_size(n)) {
        int slots = 0;
        for (int i = 0; i < PER_CLASS; i++) {
            unsigned char *p = malloc(n);
            CHECK(p != NULL && (uintptr_t)p % 16 == 0);
            size_t usable = malloc_usable_size(p);
            if (usable == class_bytes(n)) {
                slots++;
            } else {
                CHECK(usable == class_bytes(n) - 8);
                /* Once a class is promoted, its refills come from the slabs. */
                CHECK(slots == 0);
            }
            fill(p, n, i);
            promoted_blocks[n][i] = p;
        }
        /* 300 blocks of at least 136 bytes are 40 KiB: past the 16 KiB that promote a class. */
        if (n <= PROMOTED_MAX) CHECK(slots > PER_CLASS / 2);
        else CHECK(slots == 0);
    }
    for (size_t n = SLOT_MAX + 1; n <= SMALL_MAX; n = next_size(n))
        for (int i = 0; i < PER_CLASS; i++) check_fill(promoted_blocks[n][i], n, i);

    /* realloc: a promoted slot keeps a size it holds (unless that wastes 256 bytes and half),
     * and moves, contents kept, across the tiny, promoted and core boundaries. */
    unsigned char *p = promoted_blocks[200][PER_CLASS - 1];
    CHECK(malloc_usable_size(p) == 208);
    CHECK(realloc(p, 208) == p && realloc(p, 129) == p);
    unsigned char *q = realloc(p, PROMOTED_MAX);
    CHECK(q != NULL && malloc_usable_size(q) == 384);
    check_prefix(q, 129, 200, PER_CLASS - 1);
    CHECK(realloc(q, 129) == q);
    unsigned char *r = realloc(q, 100);
    CHECK(r != NULL && r != q && malloc_usable_size(r) == 112);
    check_prefix(r, 100, 200, PER_CLASS - 1);
    unsigned char *s = realloc(r, 300);
    CHECK(s != NULL && malloc_usable_size(s) == class_bytes(300));
    check_prefix(s, 100, 200, PER_CLASS - 1);
    unsigned char *t = realloc(s, 900);
    CHECK(t != NULL && malloc_usable_size(t) >= 900 && malloc_usable_size(t) % 16 == 8);
    check_prefix(t, 100, 200, PER_CLASS - 1);
    unsigned char *u = realloc(t, 150);
    CHECK(u != NULL && malloc_usable_size(u) >= 150);
    check_prefix(u, 100, 200, PER_CLASS - 1);
    free(u);
    promoted_blocks[200][PER_CLASS - 1] = malloc(200);
    fill(promoted_blocks[200][PER_CLASS - 1], 200, PER_CLASS - 1);

    /* Another thread frees every other promoted block (and exits, giving its cache back); a
     * forked child frees the rest of them and allocates more; this thread allocates again. */
    pthread_t freer;
    CHECK(pthread_create(&freer, NULL, free_promoted, NULL) == 0);
    CHECK(pthread_join(freer, NULL) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        for (size_t n = SLOT_MAX + 1; n <= PROMOTED_MAX; n++)
            for (int i = 1; i < PER_CLASS; i += 2) {
                check_fill(promoted_blocks[n][i], n, i);
                free(promoted_blocks[n][i]);
                unsigned char *v = malloc(n);
                CHECK(v != NULL && malloc_usable_size(v) >= n);
                fill(v, n, i);
                promoted_blocks[n][i] = v;
            }
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (size_t n = SLOT_MAX + 1; n <= PROMOTED_MAX; n++)
        for (int i = 0; i < PER_CLASS; i += 2) {
            unsigned char *v = malloc(n);
            CHECK(v != NULL && malloc_usable_size(v) >= n);
            fill(v, n, i);
            promoted_blocks[n][i] = v;
        }
    for (size_t n = SLOT_MAX + 1; n <= SMALL_MAX; n = next_size(n))
        for (int i = 0; i < PER_CLASS; i++) {
            check_fill(promoted_blocks[n][i], n, i);
            free(promoted_blocks[n][i]);
        }
}

#define BATCHED 40000
static const size_t batch_sizes[2] = {48, 200};
static unsigned char *batched_blocks[2][BATCHED];

/* Allocates BATCHED blocks of each batch size; with a non-NULL argument, frees them too. */
static void *allocate_batched(void *free_them) {
    for (int i = 0; i < BATCHED; i++)
        for (int k = 0; k < 2; k++) {
            size_t n = batch_sizes[k];
            unsigned char *p = malloc(n);
            CHECK(p != NULL);
            /* A slot, or for the promoted class one of the core blocks carved before. */
            size_t usable = malloc_usable_size(p);
            CHECK(usable == slot_of(n) || (k == 1 && usable == slot_of(n) - 8));
            fill(p, n, i);
            batched_blocks[k][i] = p;
        }
    for (int i = 0; i < BATCHED; i++)
        for (int k = 0; k < 2; k++) check_fill(batched_blocks[k][i], batch_sizes[k], i);
    if (free_them)
        for (int i = 0; i < BATCHED; i++)
            for (int k = 0; k < 2; k++) free(batched_blocks[k][i]);
    return NULL;
}

static void batches(void) {
    /* Promotes the 200-byte class (16 KiB of core blocks), whose blocks then are slots. */
    for (int i = 0; i < 200; i++) batched_blocks[1][i] = malloc(200);
    for (int i = 0; i < 200; i++) free(batched_blocks[1][i]);
    /* Each round's thread frees its blocks and exits, abandoning its memory (batches
     * included) to the next thread, which adopts it. */
    for (int round = 0; round < 2; round++) {
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, allocate_batched, &batched_blocks) == 0);
        CHECK(pthread_join(thread, NULL) == 0);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    if (!strcmp(argv[1], "shape")) shape();
    else if (!strcmp(argv[1], "fallback")) exact = 0, occupy_slot_region(), shape();
    else if (!strcmp(argv[1], "threads")) threads();
    else if (!strcmp(argv[1], "reuse")) reuse();
    else if (!strcmp(argv[1], "promoted")) promoted();
    else if (!strcmp(argv[1], "batches")) batches();
    else return 2;
    printf("%s: ok\n", argv[1]);
    return 0;
}
