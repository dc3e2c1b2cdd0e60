/* Multi-threaded stress with verification: every block carries cookies checked when it is
 * freed; blocks are handed between threads; threads are created and destroyed while others
 * allocate; the process forks while other threads allocate and the child must allocate too.
 * Usage: stress <rounds per worker>. Exits non-zero on any corruption. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 4
#define LIVE 512
#define EXCHANGE 256

struct block {
    size_t size;
    unsigned char *data;
};

static struct block exchange[EXCHANGE];
static unsigned exchange_count;
static pthread_mutex_t exchange_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;

static uint64_t next_random(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static size_t random_size(uint64_t *rng) {
    uint64_t r = next_random(rng) % 1000;
    if (r < 900) return next_random(rng) % 1024;          /* small: thread caches */
    if (r < 990) return 1024 + next_random(rng) % 65536;  /* medium: central heap */
    return 262144 + next_random(rng) % (4 << 20);         /* large: mappings */
}

static unsigned char cookie(const unsigned char *data, size_t size, size_t i) {
    return (unsigned char)(((uintptr_t)data >> 4) * 31 + size * 7 + i);
}

/* Fills the first and last 64 bytes (all of a small block). */
static void stamp(struct block b) {
    for (size_t i = 0; i < b.size && i < 64; i++) b.data[i] = cookie(b.data, b.size, i);
    for (size_t i = b.size > 64 ? b.size - 64 : b.size; i < b.size; i++)
        b.data[i] = cookie(b.data, b.size, i);
}

static void verify(struct block b, const unsigned char *original) {
    for (size_t i = 0; i < b.size && i < 64; i++) {
        if (b.data[i] != cookie(original, b.size, i)) {
            fprintf(stderr, "corrupt block %p size %zu at %zu\n", (void *)b.data, b.size, i);
            abort();
        }
    }
}

static void check_and_free(struct block b) {
    verify(b, b.data);
    for (size_t i = b.size > 64 ? b.size - 64 : b.size; i < b.size; i++)
        if (b.data[i] != cookie(b.data, b.size, i)) abort();
    free(b.data);
}

static struct block make(uint64_t *rng) {
    struct block b;
    b.size = random_size(rng);
    b.data = malloc(b.size);
    if (!b.data) abort();
    if (((uintptr_t)b.data & 15) != 0) abort();
    stamp(b);
    return b;
}

/* realloc keeps the first min(old, new) bytes: check the head, then re-stamp. */
static struct block resize(struct block b, uint64_t *rng) {
    size_t new_size = random_size(rng);
    const unsigned char *old = b.data;
    size_t keep = b.size < new_size ? b.size : new_size;
    unsigned char expected[64];
    for (size_t i = 0; i < keep && i < 64; i++) expected[i] = cookie(old, b.size, i);
    unsigned char *moved = realloc(b.data, new_size ? new_size : 1);
    if (!moved) abort();
    for (size_t i = 0; i < keep && i < 64; i++)
        if (moved[i] != expected[i]) abort();
    b.data = moved;
    b.size = new_size ? new_size : 1;
    stamp(b);
    return b;
}

static void give_away(struct block b) {
    pthread_mutex_lock(&exchange_lock);
    if (exchange_count < EXCHANGE) {
        exchange[exchange_count++] = b;
        b.data = NULL;
    }
    pthread_mutex_unlock(&exchange_lock);
    if (b.data) check_and_free(b);
}

static int take_foreign(struct block *out) {
    pthread_mutex_lock(&exchange_lock);
    int got = exchange_count > 0;
    if (got) *out = exchange[--exchange_count];
    pthread_mutex_unlock(&exchange_lock);
    return got;
}

/* `shared`: whether blocks go through the exchange (not in a fork child, whose copy of the
 * exchange lock may be held by a thread that does not exist there). */
static void run(uint64_t seed, long rounds, int shared) {
    struct block live[LIVE];
    memset(live, 0, sizeof live);
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    for (long r = 0; r < rounds; r++) {
        unsigned slot = next_random(&rng) % LIVE;
        uint64_t action = next_random(&rng) % 10;
        if (live[slot].data == NULL) {
            live[slot] = make(&rng);
        } else if (action < 5) {
            check_and_free(live[slot]);
            live[slot].data = NULL;
        } else if (action < 7) {
            live[slot] = resize(live[slot], &rng);
        } else if (action < 9 && shared) {
            give_away(live[slot]);
            live[slot].data = NULL;
        } else if (shared) {
            struct block foreign;
            if (take_foreign(&foreign)) check_and_free(foreign);
        }
    }
    /* Exiting threads leave half their blocks to others. */
    for (unsigned i = 0; i < LIVE; i++) {
        if (!live[i].data) continue;
        if (i % 2 && shared) give_away(live[i]);
        else check_and_free(live[i]);
    }
}

static long worker_rounds;

static void *worker(void *arg) {
    run((uintptr_t)arg, worker_rounds, 1);
    return NULL;
}

static void *short_lived(void *arg) {
    run((uintptr_t)arg, 2000, 1);
    return NULL;
}

static void *private_short_lived(void *arg) {
    run((uintptr_t)arg, 2000, 0);
    return NULL;
}

/* Creates and destroys threads while the workers run. */
static void *churn(void *arg) {
    (void)arg;
    for (uintptr_t i = 0; !stop; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_lived, (void *)(i + 1000)) != 0) abort();
        pthread_join(t, NULL);
    }
    return NULL;
}

/* The child of a fork taken while other threads allocate must be able to allocate. */
static void fork_and_check(uintptr_t seed) {
    pid_t pid = fork();
    if (pid < 0) abort();
    if (pid == 0) {
        run(seed, 3000, 0);
        pthread_t t;
        if (pthread_create(&t, NULL, private_short_lived, (void *)seed) != 0) _exit(3);
        pthread_join(t, NULL);
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork child failed: status %d\n", status);
        exit(2);
    }
}

int main(int argc, char **argv) {
    worker_rounds = argc > 1 ? atol(argv[1]) : 100000;
    pthread_t workers[WORKERS], churner;
    for (uintptr_t i = 0; i < WORKERS; i++)
        if (pthread_create(&workers[i], NULL, worker, (void *)(i + 1)) != 0) abort();
    if (pthread_create(&churner, NULL, churn, NULL) != 0) abort();
    for (uintptr_t i = 0; i < 8; i++) {
        fork_and_check(i + 500);
        usleep(2000);
    }
    for (int i = 0; i < WORKERS; i++) pthread_join(workers[i], NULL);
    stop = 1;
    pthread_join(churner, NULL);
    struct block b;
    while (take_foreign(&b)) check_and_free(b);
    puts("stress: ok");
    return 0;
}
