/* Two threads on the C malloc, for `heapworks bench --malloc` (the allocator under test
 * LD_PRELOADed; glibc's when nothing is preloaded).
 *
 *   threads prodcons MICROSECONDS SEED   one thread allocates, the other frees
 *   threads mixed MICROSECONDS SEED      each thread allocates and frees its own blocks
 *
 * prodcons: the producer allocates blocks of mixed sizes, writes its sequence number into
 * each and hands them in batches of 64 through a ring of 16 batches to the consumer, which
 * checks the numbers and frees the blocks: every block is freed by another thread than the
 * one that allocated it, and the queue costs one handshake per 64 blocks. mixed: each
 * thread keeps 1024 slots; a step picks a random slot, frees its block if it has one, and
 * allocates a new one there, writing its first and last byte. Sizes are 8 B to 4 KiB, small
 * ones far more often (8 + rand % (8 << rand % 10)). Both run until the time is up, then
 * print `ops <malloc and free calls>` and `ns <elapsed>`, each on a line. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Batches in flight, and blocks per batch. */
#define RING 16
#define BATCH 64
#define DONE -1L
#define SLOTS 1024
/* Steps between two looks at the clock. */
#define CHECK_EVERY 256

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* SplitMix64: each thread's sequence is fixed by the seed. */
static uint64_t next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static size_t mixed_size(uint64_t *state) {
    uint64_t r = next(state);
    return 8 + (size_t)((r >> 8) % (8u << (r % 10)));
}

struct shared {
    uint64_t deadline;
    uint64_t seed;
    /* Each slot holds a batch: NULL when free, else the batch's block count (or DONE). */
    struct {
        atomic_long count;
        char pad[64 - sizeof(atomic_long)];
    } ring[RING];
    void *batches[RING][BATCH];
    atomic_ulong ops[2];
};

static void *produce(void *arg) {
    struct shared *s = arg;
    uint64_t state = s->seed;
    uint64_t made = 0;
    for (size_t head = 0;; head = (head + 1) % RING) {
        while (atomic_load_explicit(&s->ring[head].count, memory_order_acquire)) sched_yield();
        if (now_ns() >= s->deadline) {
            atomic_store_explicit(&s->ring[head].count, DONE, memory_order_release);
            break;
        }
        for (int i = 0; i < BATCH; i++) {
            unsigned char *p = malloc(mixed_size(&state));
            if (!p) abort();
            memcpy(p, &made, sizeof made);
            made++;
            s->batches[head][i] = p;
        }
        atomic_store_explicit(&s->ring[head].count, BATCH, memory_order_release);
    }
    atomic_store(&s->ops[0], made);
    return NULL;
}

static void *consume(void *arg) {
    struct shared *s = arg;
    uint64_t freed = 0;
    for (size_t tail = 0;; tail = (tail + 1) % RING) {
        long count;
        while (!(count = atomic_load_explicit(&s->ring[tail].count, memory_order_acquire)))
            sched_yield();
        if (count == DONE) break;
        for (long i = 0; i < count; i++) {
            uint64_t stamp;
            memcpy(&stamp, s->batches[tail][i], sizeof stamp);
            if (stamp != freed) abort(); /* blocks arrive in the order they were made */
            free(s->batches[tail][i]);
            freed++;
        }
        atomic_store_explicit(&s->ring[tail].count, 0, memory_order_release);
    }
    atomic_store(&s->ops[1], freed);
    return NULL;
}

struct worker {
    struct shared *shared;
    int index;
};

static void *churn(void *arg) {
    struct worker *w = arg;
    uint64_t state = w->shared->seed + (uint64_t)w->index;
    unsigned char *slots[SLOTS] = {0};
    unsigned long ops = 0;
    for (unsigned long step = 0;; step++) {
        if (step % CHECK_EVERY == 0 && now_ns() >= w->shared->deadline) break;
        size_t slot = (size_t)(next(&state) % SLOTS);
        if (slots[slot]) {
            free(slots[slot]);
            ops++;
        }
        size_t size = mixed_size(&state);
        unsigned char *p = malloc(size);
        if (!p) abort();
        p[0] = p[size - 1] = (unsigned char)step;
        slots[slot] = p;
        ops++;
    }
    for (size_t slot = 0; slot < SLOTS; slot++) free(slots[slot]);
    atomic_store(&w->shared->ops[w->index], ops);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "prodcons") && strcmp(argv[1], "mixed"))) {
        fprintf(stderr, "usage: threads prodcons|mixed MICROSECONDS SEED\n");
        return 2;
    }
    static struct shared s;
    uint64_t start = now_ns();
    s.deadline = start + strtoull(argv[2], NULL, 10) * 1000u;
    s.seed = strtoull(argv[3], NULL, 10);
    pthread_t threads[2];
    struct worker workers[2] = {{&s, 0}, {&s, 1}};
    if (!strcmp(argv[1], "prodcons")) {
        pthread_create(&threads[0], NULL, produce, &s);
        pthread_create(&threads[1], NULL, consume, &s);
    } else {
        pthread_create(&threads[0], NULL, churn, &workers[0]);
        pthread_create(&threads[1], NULL, churn, &workers[1]);
    }
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    uint64_t elapsed = now_ns() - start;
    printf("ops %lu\nns %llu\n", atomic_load(&s.ops[0]) + atomic_load(&s.ops[1]),
           (unsigned long long)elapsed);
    return 0;
}
