/* `exhaust SCENARIO [MIB]`: malloc when memory runs out. A refused request must return NULL
 * with errno ENOMEM (never crash or abort), and the heap must serve again once blocks are
 * freed.
 *
 * - `as MIB` / `data MIB`: RLIMIT_AS or RLIMIT_DATA set to MIB, then this program executes
 *   itself, so that the limit holds from the first instruction (the dynamic linker, the
 *   malloc's initialization) as under `ulimit -v`. Under the limit: 1 B to 100 kB succeed, a
 *   block of 2/5 of the limit succeeds in the fresh process, one of twice the limit is
 *   refused, 1 MiB blocks until refusal, then small ones until refusal (bounded), then
 *   everything freed and the first requests served again.
 * - `mappings`: the process's memory map filled with separate mappings up to a few short of
 *   vm.max_map_count (a stand-in for a tiny limit); then a mix of sizes, each served or
 *   refused with ENOMEM; then the mappings released and every size served. Before that, many
 *   large blocks alive at once.
 * - `refusal`: requests the kernel refuses under its overcommit heuristic (64 TiB, larger
 *   than memory plus swap): NULL and ENOMEM, or, where overcommit lets them through, a block
 *   whose first and last page can be written. (No calloc here: a malloc that gets 64 TiB
 *   through MAP_NORESERVE and then clears it would fill the machine's memory.)
 */
#include "torture.h"

#include <sys/mman.h>
#include <sys/resource.h>

#define MIB ((size_t)1 << 20)
#define SMALL_COUNT 5

static const size_t small_sizes[SMALL_COUNT] = {1, 100, 1000, 10000, 100000};

/* Whether a refused request left ENOMEM; a served one is written and returned. */
static void *request(size_t size, const char *what)
{
    errno = 0;
    char *block = malloc(size);
    if (!block) {
        CHECK(errno == ENOMEM, "a refused %s of %zu B set errno %d, not ENOMEM", what, size,
              errno);
        return NULL;
    }
    block[0] = 1;
    block[size - 1] = 2;
    return block;
}

static void small_requests_succeed(const char *when)
{
    for (int i = 0; i < SMALL_COUNT; i++) {
        void *block = request(small_sizes[i], when);
        CHECK(block != NULL, "%s: malloc(%zu) failed", when, small_sizes[i]);
        free(block);
    }
}

/* Allocates blocks of `size` until a request is refused (or `bound` blocks); returns the
 * count and keeps them in `held`. */
static size_t fill_until_refused(void **held, size_t bound, size_t size, const char *what)
{
    size_t count = 0;
    while (count < bound) {
        void *block = request(size, what);
        if (!block)
            break;
        *(size_t *)block = count;
        held[count++] = block;
    }
    return count;
}

static void release_all(void **held, size_t count, const char *what)
{
    for (size_t i = 0; i < count; i++) {
        CHECK(*(size_t *)held[i] == i, "%s block %zu was overwritten", what, i);
        free(held[i]);
    }
}

static void under_limit(size_t limit_mib)
{
    size_t limit = limit_mib * MIB;
    small_requests_succeed("first requests under the limit");
    void *large = request(limit / 2, "fresh large request");
    CHECK(large != NULL, "malloc(%zu MiB) failed under a %zu MiB limit in a fresh process",
          limit / 2 / MIB, limit_mib);
    free(large);
    void *too_large = request(limit * 2, "too large request");
    CHECK(too_large == NULL, "malloc(%zu MiB) succeeded under a %zu MiB limit", limit * 2 / MIB,
          limit_mib);
    free(too_large);
    char *kept = malloc(100);
    if (kept) {
        memset(kept, 7, 100);
        errno = 0;
        void *moved = realloc(kept, limit * 2);
        CHECK(!moved && errno == ENOMEM, "realloc to twice the limit: %p, errno %d", moved, errno);
        if (moved)
            kept = moved;
        CHECK(kept[99] == 7, "a refused realloc changed the block");
        free(kept);
    }
    size_t bound = limit / MIB + 64;
    void **big = calloc(bound, sizeof *big);
    size_t smalls_bound = 200000;
    void **small = calloc(smalls_bound, sizeof *small);
    if (!big || !small)
        die("no room for the bookkeeping arrays");
    size_t big_count = fill_until_refused(big, bound, MIB, "1 MiB request");
    CHECK(big_count < bound, "%zu blocks of 1 MiB fit under a %zu MiB limit", big_count,
          limit_mib);
    size_t small_count = fill_until_refused(small, smalls_bound, 64, "64 B request");
    release_all(small, small_count, "small");
    release_all(big, big_count, "1 MiB");
    small_requests_succeed("after freeing everything");
    large = request(limit / 5, "request after recovery");
    CHECK(large != NULL, "malloc(%zu MiB) failed after everything was freed", limit / 5 / MIB);
    free(large);
    free(big);
    free(small);
}

/* Sets the limit and executes this program again under it. */
static void limit_and_exec(const char *self, const char *resource_name, const char *mib_text)
{
    size_t mib = number_argument(mib_text, "limit");
    int resource = !strcmp(resource_name, "as") ? RLIMIT_AS : RLIMIT_DATA;
    struct rlimit limit = {mib * MIB, mib * MIB};
    if (setrlimit(resource, &limit) != 0)
        die("setrlimit: %s", strerror(errno));
    char *arguments[] = {(char *)self, "limited", (char *)mib_text, NULL};
    execv("/proc/self/exe", arguments);
    die("execv: %s", strerror(errno));
}

/* Maps `count` separate pages (every other page of one reservation made accessible), each
 * its own entry of the memory map; returns the reservation. */
static char *split_mappings(size_t count, size_t page)
{
    char *base = mmap(NULL, count * 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (base == MAP_FAILED)
        die("mmap of the filler: %s", strerror(errno));
    for (size_t i = 0; i < count; i++)
        if (mprotect(base + i * 2 * page, page, PROT_READ) != 0)
            die("mprotect of filler page %zu: %s", i, strerror(errno));
    return base;
}

static size_t mapping_count(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        die("/proc/self/maps: %s", strerror(errno));
    size_t lines = 0;
    int c;
    while ((c = fgetc(maps)) != EOF)
        lines += c == '\n';
    fclose(maps);
    return lines;
}

static size_t read_max_map_count(void)
{
    FILE *file = fopen("/proc/sys/vm/max_map_count", "r");
    unsigned long value = 65530;
    if (file) {
        if (fscanf(file, "%lu", &value) != 1)
            value = 65530;
        fclose(file);
    }
    return value;
}

static void mappings_scenario(void)
{
    /* Many large blocks alive at once, each with its first word written. */
    enum { LARGE = 3000 };
    static void *large[LARGE];
    for (size_t i = 0; i < LARGE; i++) {
        large[i] = malloc(256 << 10);
        if (!large[i])
            die("malloc(256 KiB) number %zu returned NULL", i);
        *(size_t *)large[i] = i;
    }
    release_all(large, LARGE, "256 KiB");
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t free_entries = 48;
    size_t used = mapping_count();
    size_t max = read_max_map_count();
    if (used + free_entries + 16 > max)
        die("the map is already full (%zu of %zu)", used, max);
    size_t filler_count = (max - used - free_entries) / 2;
    char *filler = split_mappings(filler_count, page);
    enum { TRIES = 2000 };
    static void *held[TRIES];
    size_t mix_sizes[] = {24, 3000, 70000, 300000, 2 << 20};
    size_t served = 0;
    for (size_t i = 0; i < TRIES; i++) {
        void *block = request(mix_sizes[i % 5], "request with the map full");
        if (block) {
            *(size_t *)block = served;
            held[served++] = block;
        }
    }
    release_all(held, served, "map-full");
    if (munmap(filler, filler_count * 2 * page) != 0)
        die("munmap of the filler: %s", strerror(errno));
    for (size_t i = 0; i < 5; i++) {
        void *block = request(mix_sizes[i], "request after the map was freed");
        CHECK(block != NULL, "malloc(%zu) failed once the map had room again", mix_sizes[i]);
        free(block);
    }
}

static void refusal_scenario(void)
{
    size_t huge = (size_t)1 << 46;
    for (int round = 0; round < 3; round++) {
        char *block = request(huge, "64 TiB request");
        if (block)
            block[huge - 4096] = 1;
        free(block);
        void *aligned_block = NULL;
        int code = posix_memalign(&aligned_block, 4096, huge);
        CHECK(code == 0 || code == ENOMEM, "posix_memalign(4096, 64 TiB) returned %d", code);
        free(aligned_block);
        small_requests_succeed("after a refused 64 TiB request");
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "limited")) {
        under_limit(number_argument(argv[2], "limit"));
        return finish();
    }
    if (argc == 3 && (!strcmp(argv[1], "as") || !strcmp(argv[1], "data")))
        limit_and_exec(argv[0], argv[1], argv[2]);
    else if (argc == 2 && !strcmp(argv[1], "mappings"))
        mappings_scenario();
    else if (argc == 2 && !strcmp(argv[1], "refusal"))
        refusal_scenario();
    else
        die("usage: exhaust as|data MIB | exhaust mappings | exhaust refusal");
    return finish();
}
