/* Thread workloads at any thread count, on the C malloc, for `heapworks bench --malloc` (the
 * allocator under test LD_PRELOADed; glibc's when nothing is preloaded). Written after the
 * ideas of larson, xmalloc-test and mimalloc-bench's thread tests, not their code.
 *
 *   scaling WORKLOAD THREADS MICROSECONDS SEED
 *
 * larson    a server: THREADS lanes, each a succession of short-lived threads. A thread takes
 *           over its lane's 1000 blocks (8 B to 1 KiB), replaces random ones ROUND times
 *           (free, then malloc of a new random size, its first and last byte written), and
 *           exits, leaving them to its successor: every block is freed by another thread
 *           than the one that made it, often one that has exited.
 * pairs     producers and consumers in pairs: each producer hands blocks of 8 B to 4 KiB, in
 *           batches of 64 stamped with their sequence numbers, through a ring to its consumer,
 *           which checks the stamps and frees them.
 * fanout    one producer feeding THREADS - 1 consumers in turn (a dispatcher).
 * fanin     THREADS - 1 producers feeding one consumer (a collector).
 * churn     threads that start, allocate 256 blocks, free half of them and leave the other
 *           half in a shared exchange, from which later threads (of any lane) free them,
 *           then exit: thread start, exit with cached blocks, and frees of a dead thread's
 *           blocks, over and over.
 *
 * Each runs until the time is up, then prints on lines of their own `ops` (malloc and free
 * calls), `ns` (elapsed) and `maxrss_kib` (the process's peak resident set). A stamp or a
 * byte that is not what was written aborts the run. Two threads of a 2-core machine share it
 * with nothing else; more are oversubscribed, which is what contention on a busy server
 * costs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_THREADS 64
/* larson: blocks per lane, and replacements per thread of a lane. */
#define LANE_BLOCKS 1000
#define ROUND 4096
/* pairs, fanout, fanin: batches in flight per ring, blocks per batch. */
#define RING 16
#define BATCH 64
#define DONE -1L
/* churn: blocks a thread makes, and exchange slots (a power of two). */
#define CHURN_BLOCKS 256
#define EXCHANGE 4096
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

/* 8 B to 4 KiB, small sizes far more often. */
static size_t mixed_size(uint64_t *state) {
    uint64_t r = next(state);
    return 8 + (size_t)((r >> 8) % (8u << (r % 10)));
}

/* 8 B to 1 KiB, uniform (larson's range). */
static size_t server_size(uint64_t *state) {
    return 8 + (size_t)(next(state) % 1017);
}

static uint64_t deadline, seed;
static atomic_ulong total_ops;

static void *checked_malloc(size_t size, unsigned char mark) {
    unsigned char *p = malloc(size);
    if (!p) abort();
    p[0] = p[size - 1] = mark;
    return p;
}

static void check_and_free(unsigned char *p, size_t size, unsigned char mark) {
    if (p[0] != mark || p[size - 1] != mark) abort();
    free(p);
}

static void start(pthread_t *thread, void *(*body)(void *), void *arg) {
    if (pthread_create(thread, NULL, body, arg)) abort();
}

/* ---- larson ---- */

struct lane {
    unsigned char *blocks[LANE_BLOCKS];
    size_t sizes[LANE_BLOCKS];
    uint64_t state;
    unsigned long ops;
};

static void *larson_thread(void *arg) {
    struct lane *lane = arg;
    for (int step = 0; step < ROUND; step++) {
        size_t at = (size_t)(next(&lane->state) % LANE_BLOCKS);
        unsigned char mark = (unsigned char)(at * 31);
        check_and_free(lane->blocks[at], lane->sizes[at], mark);
        lane->sizes[at] = server_size(&lane->state);
        lane->blocks[at] = checked_malloc(lane->sizes[at], mark);
    }
    lane->ops += 2 * ROUND;
    return NULL;
}

static void *larson_lane(void *arg) {
    struct lane *lane = arg;
    for (size_t at = 0; at < LANE_BLOCKS; at++) {
        lane->sizes[at] = server_size(&lane->state);
        lane->blocks[at] = checked_malloc(lane->sizes[at], (unsigned char)(at * 31));
    }
    while (now_ns() < deadline) {
        pthread_t worker;
        start(&worker, larson_thread, lane);
        pthread_join(worker, NULL);
    }
    for (size_t at = 0; at < LANE_BLOCKS; at++)
        check_and_free(lane->blocks[at], lane->sizes[at], (unsigned char)(at * 31));
    atomic_fetch_add(&total_ops, lane->ops);
    return NULL;
}

static void larson(int threads) {
    static struct lane lanes[MAX_THREADS];
    pthread_t runners[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        lanes[i].state = seed + (uint64_t)i;
        start(&runners[i], larson_lane, &lanes[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(runners[i], NULL);
}

/* ---- pairs, fanout, fanin: producers and consumers joined by one-way rings ---- */

struct ring {
    struct {
        _Alignas(64) atomic_long count; /* 0: free; else the batch's blocks, or DONE */
    } slot[RING];
    void *batches[RING][BATCH];
    size_t head, tail;      /* the producer's and the consumer's next slot */
    uint64_t sent, received; /* stamps: blocks in the order they were made */
};

struct party {
    struct ring **rings; /* the rings this thread writes (a producer) or reads (a consumer) */
    int count;
    uint64_t state;
    unsigned long ops;
};

static void *produce(void *arg) {
    struct party *me = arg;
    for (int turn = 0;; turn = (turn + 1) % me->count) {
        struct ring *ring = me->rings[turn];
        atomic_long *count = &ring->slot[ring->head].count;
        while (atomic_load_explicit(count, memory_order_acquire)) sched_yield();
        if (now_ns() >= deadline) break;
        for (int i = 0; i < BATCH; i++) {
            unsigned char *p = malloc(mixed_size(&me->state));
            if (!p) abort();
            memcpy(p, &ring->sent, sizeof ring->sent);
            ring->sent++;
            ring->batches[ring->head][i] = p;
        }
        atomic_store_explicit(count, BATCH, memory_order_release);
        ring->head = (ring->head + 1) % RING;
        me->ops += BATCH;
    }
    /* Every ring gets its end mark, once its slot is free. */
    for (int r = 0; r < me->count; r++) {
        struct ring *ring = me->rings[r];
        atomic_long *count = &ring->slot[ring->head].count;
        while (atomic_load_explicit(count, memory_order_acquire)) sched_yield();
        atomic_store_explicit(count, DONE, memory_order_release);
    }
    atomic_fetch_add(&total_ops, me->ops);
    return NULL;
}

static void *consume(void *arg) {
    struct party *me = arg;
    int open = me->count;
    for (int turn = 0; open > 0; turn = (turn + 1) % me->count) {
        struct ring *ring = me->rings[turn];
        if (!ring) continue;
        atomic_long *count = &ring->slot[ring->tail].count;
        long blocks = atomic_load_explicit(count, memory_order_acquire);
        if (!blocks) {
            sched_yield();
            continue;
        }
        if (blocks == DONE) {
            me->rings[turn] = NULL;
            open--;
            continue;
        }
        for (long i = 0; i < blocks; i++) {
            uint64_t stamp;
            memcpy(&stamp, ring->batches[ring->tail][i], sizeof stamp);
            if (stamp != ring->received) abort();
            free(ring->batches[ring->tail][i]);
            ring->received++;
        }
        atomic_store_explicit(count, 0, memory_order_release);
        ring->tail = (ring->tail + 1) % RING;
        me->ops += (unsigned long)blocks;
    }
    atomic_fetch_add(&total_ops, me->ops);
    return NULL;
}

/* `producers` producers and `consumers` consumers (one side has one thread, or they pair up),
 * a ring between each producer and each consumer it feeds. */
static void exchange(int producers, int consumers) {
    static struct ring rings[MAX_THREADS];
    static struct ring *ends[2 * MAX_THREADS][MAX_THREADS];
    static struct party parties[2 * MAX_THREADS];
    int pairs = producers > consumers ? producers : consumers;
    for (int r = 0; r < pairs; r++) {
        int p = producers == 1 ? 0 : r, c = consumers == 1 ? 0 : r;
        ends[p][parties[p].count++] = &rings[r];
        ends[producers + c][parties[producers + c].count++] = &rings[r];
    }
    pthread_t threads[2 * MAX_THREADS];
    for (int t = 0; t < producers + consumers; t++) {
        parties[t].rings = ends[t];
        parties[t].state = seed + (uint64_t)t;
        start(&threads[t], t < producers ? produce : consume, &parties[t]);
    }
    for (int t = 0; t < producers + consumers; t++) pthread_join(threads[t], NULL);
}

/* ---- churn ---- */

static struct {
    pthread_mutex_t lock;
    unsigned char *blocks[EXCHANGE];
    size_t sizes[EXCHANGE];
    size_t count;
} shared_exchange = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0};

struct churner {
    uint64_t state;
    unsigned long ops;
};

/* Frees up to `want` blocks other threads left (they may all have exited). */
static unsigned long take_leftovers(size_t want) {
    unsigned char *blocks[CHURN_BLOCKS / 2];
    size_t sizes[CHURN_BLOCKS / 2], got = 0;
    pthread_mutex_lock(&shared_exchange.lock);
    while (got < want && shared_exchange.count > 0) {
        shared_exchange.count--;
        blocks[got] = shared_exchange.blocks[shared_exchange.count];
        sizes[got++] = shared_exchange.sizes[shared_exchange.count];
    }
    pthread_mutex_unlock(&shared_exchange.lock);
    for (size_t i = 0; i < got; i++) check_and_free(blocks[i], sizes[i], 0xc5);
    return got;
}

static void *churn_thread(void *arg) {
    struct churner *me = arg;
    unsigned char *blocks[CHURN_BLOCKS];
    size_t sizes[CHURN_BLOCKS];
    for (int i = 0; i < CHURN_BLOCKS; i++) {
        sizes[i] = mixed_size(&me->state);
        blocks[i] = checked_malloc(sizes[i], 0xc5);
    }
    for (int i = 0; i < CHURN_BLOCKS; i += 2) check_and_free(blocks[i], sizes[i], 0xc5);
    me->ops += CHURN_BLOCKS + CHURN_BLOCKS / 2;
    me->ops += take_leftovers(CHURN_BLOCKS / 2);
    pthread_mutex_lock(&shared_exchange.lock);
    int kept = 0;
    for (int i = 1; i < CHURN_BLOCKS && shared_exchange.count < EXCHANGE; i += 2, kept++) {
        shared_exchange.blocks[shared_exchange.count] = blocks[i];
        shared_exchange.sizes[shared_exchange.count++] = sizes[i];
    }
    pthread_mutex_unlock(&shared_exchange.lock);
    for (int i = 1 + 2 * kept; i < CHURN_BLOCKS; i += 2) {
        check_and_free(blocks[i], sizes[i], 0xc5);
        me->ops++;
    }
    return NULL;
}

static void *churn_lane(void *arg) {
    struct churner *me = arg;
    while (now_ns() < deadline) {
        pthread_t worker;
        start(&worker, churn_thread, me);
        pthread_join(worker, NULL);
    }
    atomic_fetch_add(&total_ops, me->ops);
    return NULL;
}

static void churn(int threads) {
    static struct churner lanes[MAX_THREADS];
    pthread_t runners[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        lanes[i].state = seed + (uint64_t)i;
        start(&runners[i], churn_lane, &lanes[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(runners[i], NULL);
    while (take_leftovers(CHURN_BLOCKS / 2)) {}
}

int main(int argc, char **argv) {
    int threads = argc == 5 ? atoi(argv[2]) : 0;
    if (threads < 2 || threads > MAX_THREADS) {
        fprintf(stderr, "usage: scaling larson|pairs|fanout|fanin|churn THREADS(2-%d) "
                        "MICROSECONDS SEED\n", MAX_THREADS);
        return 2;
    }
    const char *workload = argv[1];
    uint64_t begin = now_ns();
    deadline = begin + strtoull(argv[3], NULL, 10) * 1000u;
    seed = strtoull(argv[4], NULL, 10);
    if (!strcmp(workload, "larson")) {
        larson(threads);
    } else if (!strcmp(workload, "pairs")) {
        exchange(threads / 2, threads - threads / 2);
    } else if (!strcmp(workload, "fanout")) {
        exchange(1, threads - 1);
    } else if (!strcmp(workload, "fanin")) {
        exchange(threads - 1, 1);
    } else if (!strcmp(workload, "churn")) {
        churn(threads);
    } else {
        fprintf(stderr, "scaling: unknown workload `%s`\n", workload);
        return 2;
    }
    uint64_t elapsed = now_ns() - begin;
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("ops %lu\nns %llu\nmaxrss_kib %ld\n", atomic_load(&total_ops),
           (unsigned long long)elapsed, usage.ru_maxrss);
    return 0;
}
