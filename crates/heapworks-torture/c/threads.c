/* `threads SCENARIO SEED THREADS OPS`: randomized multi-threaded operation sequences against
 * a shadow model.
 *
 * Every live block is in exactly one shadow slot (address, size, cookie) owned by one thread
 * or by the shared exchange; its contents are the cookie's pattern, verified before every
 * realloc, free and hand-over, so a block handed out twice or overlapping another live block
 * is seen. Scenarios:
 * - `mixed`: each thread mallocs, callocs, memaligns, reallocs and frees its own blocks;
 * - `handoff`: as mixed, and threads pass blocks through a locked exchange, so most blocks
 *   are freed or realloced by another thread than the one that allocated them;
 * - `exiting`: rounds of short-lived threads that allocate, free some (filling their caches),
 *   leave some in the exchange and exit; the main thread adopts, verifies and frees them.
 */
#include "torture.h"

#include <pthread.h>

#define SLOTS 128
#define EXCHANGE 1024

struct block {
    char *address;
    size_t size;
    uint64_t cookie;
};

static struct {
    pthread_mutex_t lock;
    struct block blocks[EXCHANGE];
    size_t count;
} exchange = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t seed;
static size_t ops_per_thread;
static int handing_off;

/* A size: mostly small, some medium, a few large. */
static size_t random_size(uint64_t *rng)
{
    size_t roll = below(rng, 100);
    if (roll < 70)
        return below(rng, 128) + 1;
    if (roll < 90)
        return below(rng, 4096) + 1;
    if (roll < 98)
        return below(rng, 65536) + 1;
    return below(rng, 1 << 20) + 1;
}

static void check_block(const struct block *b, const char *when)
{
    CHECK(intact(b->address, b->size, b->cookie),
          "%s: block %p of %zu B (cookie %llx) was overwritten: another block overlaps it", when,
          (void *)b->address, b->size, (unsigned long long)b->cookie);
}

/* A fresh block by a random entry point, patterned; size 0 when the allocation failed. */
static struct block allocate(uint64_t *rng)
{
    struct block b = {NULL, random_size(rng), mix(rng)};
    switch (below(rng, 8)) {
    case 0:
        b.address = calloc(1, b.size);
        for (size_t at = 0; b.address && at < b.size; at = pattern_step(at, b.size))
            if (b.address[at] != 0) {
                fail("calloc(1, %zu) = %p is not zeroed at %zu", b.size, (void *)b.address, at);
                break;
            }
        break;
    case 1: {
        void *result = NULL;
        size_t alignment = (size_t)64 << below(rng, 6);
        if (posix_memalign(&result, alignment, b.size) == 0) {
            CHECK(aligned(result, alignment), "posix_memalign(%zu) = %p", alignment, result);
            b.address = result;
        }
        break;
    }
    default:
        b.address = malloc(b.size);
    }
    if (!b.address) {
        fail("allocation of %zu B failed", b.size);
        b.size = 0;
        return b;
    }
    CHECK(aligned(b.address, owed_alignment(b.size)), "block %p of %zu B is misaligned",
          (void *)b.address, b.size);
    fill(b.address, b.size, b.cookie);
    return b;
}

static void release(struct block *b)
{
    check_block(b, "free");
    free(b->address);
    b->address = NULL;
}

static void resize(struct block *b, uint64_t *rng)
{
    check_block(b, "realloc");
    size_t size = random_size(rng);
    char *moved = realloc(b->address, size);
    if (!moved) {
        fail("realloc(%p, %zu) returned NULL", (void *)b->address, size);
        return;
    }
    size_t common = size < b->size ? size : b->size;
    CHECK(intact_prefix(moved, b->size, common, b->cookie), "realloc from %zu to %zu B lost the contents", b->size,
          size);
    b->address = moved;
    b->size = size;
    b->cookie = mix(rng);
    fill(b->address, b->size, b->cookie);
}

/* Puts `b` into the exchange (1) or leaves it with the caller when the exchange is full. */
static int hand_over(struct block *b)
{
    check_block(b, "hand-over");
    pthread_mutex_lock(&exchange.lock);
    int taken = exchange.count < EXCHANGE;
    if (taken) {
        exchange.blocks[exchange.count++] = *b;
        b->address = NULL;
    }
    pthread_mutex_unlock(&exchange.lock);
    return taken;
}

/* Takes a block out of the exchange into `b` (1), or 0 when it is empty. */
static int adopt(struct block *b)
{
    pthread_mutex_lock(&exchange.lock);
    int found = exchange.count > 0;
    if (found)
        *b = exchange.blocks[--exchange.count];
    pthread_mutex_unlock(&exchange.lock);
    if (found)
        check_block(b, "adoption");
    return found;
}

static void *worker(void *argument)
{
    uint64_t rng = seed ^ (uint64_t)(uintptr_t)argument * 0x9e3779b97f4a7c15ull;
    struct block slots[SLOTS] = {{0}};
    for (size_t op = 0; op < ops_per_thread; op++) {
        struct block *slot = &slots[below(&rng, SLOTS)];
        size_t roll = below(&rng, 100);
        if (!slot->address) {
            if (!(handing_off && roll < 30 && adopt(slot)))
                *slot = allocate(&rng);
            if (!slot->size)
                slot->address = NULL;
        } else if (roll < 45) {
            release(slot);
        } else if (roll < 70) {
            resize(slot, &rng);
        } else if (handing_off && roll < 90) {
            hand_over(slot);
        } else {
            check_block(slot, "verify");
        }
    }
    for (size_t i = 0; i < SLOTS; i++)
        if (slots[i].address)
            release(&slots[i]);
    return NULL;
}

/* A short-lived thread: allocates, frees half (into its cache), leaves the rest in the
 * exchange, exits. */
static void *short_lived(void *argument)
{
    uint64_t rng = seed ^ (uint64_t)(uintptr_t)argument * 0xbf58476d1ce4e5b9ull;
    struct block blocks[32];
    for (size_t i = 0; i < 32; i++)
        blocks[i] = allocate(&rng);
    for (size_t i = 0; i < 32; i++) {
        if (!blocks[i].address)
            continue;
        if (i % 2 == 0 || !hand_over(&blocks[i]))
            release(&blocks[i]);
    }
    return NULL;
}

static void drain_exchange(void)
{
    struct block b;
    while (adopt(&b))
        release(&b);
}

static void run_workers(size_t threads)
{
    pthread_t ids[64];
    for (size_t t = 0; t < threads; t++)
        if (pthread_create(&ids[t], NULL, worker, (void *)(uintptr_t)(t + 1)))
            die("pthread_create failed");
    for (size_t t = 0; t < threads; t++)
        pthread_join(ids[t], NULL);
}

static void run_exiting(size_t threads)
{
    size_t rounds = ops_per_thread / 64 + 1;
    for (size_t round = 0; round < rounds; round++) {
        pthread_t ids[64];
        for (size_t t = 0; t < threads; t++)
            if (pthread_create(&ids[t], NULL, short_lived, (void *)(uintptr_t)(round * 64 + t)))
                die("pthread_create failed");
        for (size_t t = 0; t < threads; t++)
            pthread_join(ids[t], NULL);
        drain_exchange();
    }
}

int main(int argc, char **argv)
{
    if (argc != 5)
        die("usage: threads mixed|handoff|exiting SEED THREADS OPS");
    seed = number_argument(argv[2], "seed");
    size_t threads = number_argument(argv[3], "threads");
    ops_per_thread = number_argument(argv[4], "ops");
    if (threads < 1 || threads > 64)
        die("threads must be 1 to 64");
    const char *scenario = argv[1];
    if (!strcmp(scenario, "mixed")) {
        run_workers(threads);
    } else if (!strcmp(scenario, "handoff")) {
        handing_off = 1;
        run_workers(threads);
        drain_exchange();
    } else if (!strcmp(scenario, "exiting")) {
        run_exiting(threads);
    } else {
        die("unknown scenario `%s`", scenario);
    }
    return finish();
}
