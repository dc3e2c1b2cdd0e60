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
 * print `ops <malloc and free calls>` and `ns <elapsed>`, each on a line.
 *
 * Then what the run had of the machine, each on a line too: `wait_ns`, the time the two
 * threads were ready to run but off a CPU (other processes had it: from
 * /proc/thread-self/schedstat, summed over both threads), `run_ns` their time on a CPU,
 * `switches` their involuntary context switches, and `roundtrip_ns`, the time a cache line
 * takes to go from one thread to the other and back, measured after the run by two threads
 * on two different CPUs handing a counter back and forth for at most 2 ms (milliseconds
 * when another process holds one of them): where the hypervisor put the two CPUs at that
 * moment (on the 2-vCPU EPYC VM of the README, 90-130 ns, or 400-480 ns when the host puts
 * the vCPUs far apart), which is what an allocator that shares memory between threads pays.
 * These reads use bare system calls, not stdio. */
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
#include <fcntl.h>
#include <unistd.h>

/* Batches in flight, and blocks per batch. */
#define RING 16
#define BATCH 64
#define DONE -1L
#define SLOTS 1024
/* Steps between two looks at the clock. */
#define CHECK_EVERY 256
/* The round-trip measurement: at most this many round trips, or this long. */
#define ROUNDTRIPS 20000
#define ROUNDTRIP_NS 2000000u

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
    /* What each thread had of the machine, taken as it ends. */
    struct seen {
        unsigned long long run_ns, wait_ns;
        long switches;
    } seen[2];
};

/* Reads a small /proc file into buf, NUL-terminated, with bare system calls (no stdio, so no
 * malloc). Returns the bytes read, 0 on any failure. */
static size_t read_proc(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0) n += (size_t)r;
    close(fd);
    buf[n] = 0;
    return n;
}

/* The calling thread's time on a CPU and time waiting for one (schedstat; zeros where the
 * kernel has none) and its involuntary context switches. */
static void take_seen(struct seen *seen) {
    char buf[128];
    memset(seen, 0, sizeof *seen);
    if (read_proc("/proc/thread-self/schedstat", buf, sizeof buf)) {
        char *end;
        seen->run_ns = strtoull(buf, &end, 10);
        seen->wait_ns = strtoull(end, &end, 10);
    }
    struct rusage usage;
    if (!getrusage(RUSAGE_THREAD, &usage)) seen->switches = usage.ru_nivcsw;
}

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
    take_seen(&s->seen[0]);
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
    take_seen(&s->seen[1]);
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
    take_seen(&w->shared->seen[w->index]);
    return NULL;
}

/* The round trip: the counter is odd while the pinger waits for the ponger. */
static struct {
    _Alignas(64) atomic_ulong counter;
    _Alignas(64) atomic_int stop;
} line;

static void *pong(void *arg) {
    (void)arg;
    for (unsigned long want = 1;; want += 2) {
        unsigned long seen;
        while ((seen = atomic_load_explicit(&line.counter, memory_order_acquire)) != want)
            if (atomic_load_explicit(&line.stop, memory_order_relaxed)) return NULL;
        atomic_store_explicit(&line.counter, want + 1, memory_order_release);
    }
}

/* Nanoseconds per round trip of a cache line between this thread and a new one, over at
 * most ROUNDTRIPS trips or ROUNDTRIP_NS (0 if the thread cannot start). */
static double roundtrip_ns(void) {
    /* This thread stays on its CPU and the other runs on any other one, so that the trip
     * measures where the CPUs are, not whether the scheduler put both threads on one. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    cpu_set_t here, elsewhere;
    int cpu = sched_getcpu();
    if (cpu >= 0 && !sched_getaffinity(0, sizeof elsewhere, &elsewhere)) {
        CPU_CLR(cpu, &elsewhere);
        if (CPU_COUNT(&elsewhere) > 0) {
            CPU_ZERO(&here);
            CPU_SET(cpu, &here);
            sched_setaffinity(0, sizeof here, &here);
            pthread_attr_setaffinity_np(&attr, sizeof elsewhere, &elsewhere);
        }
    }
    pthread_t other;
    int failed = pthread_create(&other, &attr, pong, NULL);
    pthread_attr_destroy(&attr);
    if (failed) return 0;
    /* Wait until the other thread runs, so its start-up is not counted. */
    atomic_store_explicit(&line.counter, 1, memory_order_release);
    while (atomic_load_explicit(&line.counter, memory_order_acquire) != 2) sched_yield();
    uint64_t start = now_ns();
    unsigned long trips = 0;
    while (trips < ROUNDTRIPS) {
        unsigned long next = 2 * trips + 3;
        atomic_store_explicit(&line.counter, next, memory_order_release);
        while (atomic_load_explicit(&line.counter, memory_order_acquire) != next + 1) {}
        trips++;
        if ((trips < 16 || trips % 16 == 0) && now_ns() - start >= ROUNDTRIP_NS) break;
    }
    uint64_t elapsed = now_ns() - start;
    atomic_store(&line.stop, 1);
    pthread_join(other, NULL);
    return (double)elapsed / (double)trips;
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
    printf("wait_ns %llu\nrun_ns %llu\nswitches %ld\n", s.seen[0].wait_ns + s.seen[1].wait_ns,
           s.seen[0].run_ns + s.seen[1].run_ns, s.seen[0].switches + s.seen[1].switches);
    printf("roundtrip_ns %.1f\n", roundtrip_ns());
    return 0;
}
