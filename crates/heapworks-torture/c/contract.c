/* `contract GROUP`: the malloc family's documented behaviour, one group of entry points per
 * run (malloc, calloc, realloc, free, align, usable). Every failed check is reported (not only
 * the first); the exit status is 1 when any failed.
 *
 * Sizes at the limits: SIZE_MAX, PTRDIFF_MAX and PTRDIFF_MAX + 1 can never be served (no
 * object may be larger than PTRDIFF_MAX), so each must give NULL with errno ENOMEM. Where C
 * leaves a choice (malloc(0), realloc(p, 0), aligned_alloc with an alignment that is not a
 * power of two), every documented choice is accepted.
 */
#include "torture.h"

#include <stddef.h>

#define PTRDIFF_LIMIT ((size_t)PTRDIFF_MAX)

/* Sizes that cross every size class boundary of the usual designs. */
static const size_t sizes[] = {1,    7,    8,     15,    16,     17,      24,     32,     48,
                               64,   100,  128,   129,   255,    256,     384,    500,    1000,
                               1024, 2048, 4000,  4096,  4097,   8192,    12345,  32768,  65536,
                               65537, 131072, 200000, 262145, 1 << 20, 3 << 20, 16 << 20};
#define SIZE_COUNT (sizeof sizes / sizeof sizes[0])

/* Calls `allocate` with a size that cannot be served; it must give NULL and ENOMEM. */
static void expect_refused(void *result, int error, const char *call)
{
    CHECK(result == NULL, "%s returned %p instead of NULL", call, result);
    free(result);
    CHECK(error == ENOMEM, "%s set errno %d (%s), not ENOMEM", call, error, strerror(error));
}

static void malloc_group(void)
{
    void *blocks[SIZE_COUNT];
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        blocks[i] = malloc(sizes[i]);
        if (!blocks[i]) {
            fail("malloc(%zu) returned NULL", sizes[i]);
            continue;
        }
        CHECK(aligned(blocks[i], owed_alignment(sizes[i])), "malloc(%zu) = %p is not %zu-aligned",
              sizes[i], blocks[i], owed_alignment(sizes[i]));
        fill(blocks[i], sizes[i], i);
    }
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        CHECK(!blocks[i] || intact(blocks[i], sizes[i], i),
              "malloc(%zu)'s contents changed while other blocks were allocated", sizes[i]);
        free(blocks[i]);
    }
    void *zero = malloc(0), *other_zero = malloc(0);
    CHECK(!zero || !other_zero || zero != other_zero, "two malloc(0) returned the same %p", zero);
    free(zero);
    free(other_zero);
    size_t limits[] = {SIZE_MAX, SIZE_MAX - 4096, PTRDIFF_LIMIT + 1, PTRDIFF_LIMIT};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        char call[64];
        snprintf(call, sizeof call, "malloc(%zu)", limits[i]);
        errno = 0;
        void *result = malloc(limits[i]);
        expect_refused(result, errno, call);
    }
}

static void calloc_group(void)
{
    /* Dirty the heap first, so that calloc must really clear reused memory. */
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        void *dirty = malloc(sizes[i]);
        if (dirty) {
            memset(dirty, 0xa5, sizes[i]);
            free(dirty);
        }
    }
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        unsigned char *block = calloc(1, sizes[i]);
        if (!block) {
            fail("calloc(1, %zu) returned NULL", sizes[i]);
            continue;
        }
        size_t nonzero = 0;
        for (size_t at = 0; at < sizes[i]; at++)
            nonzero += block[at] != 0;
        CHECK(nonzero == 0, "calloc(1, %zu) has %zu non-zero bytes", sizes[i], nonzero);
        free(block);
    }
    unsigned char *array = calloc(1000, 24);
    CHECK(array != NULL, "calloc(1000, 24) returned NULL");
    free(array);
    void *empty = calloc(0, 16), *none = calloc(16, 0);
    free(empty);
    free(none);
    struct {
        size_t count, size;
    } overflows[] = {{SIZE_MAX / 2 + 1, 2}, {(size_t)1 << 33, (size_t)1 << 33},
                     {SIZE_MAX, SIZE_MAX}, {1, PTRDIFF_LIMIT + 1}, {2, PTRDIFF_LIMIT / 2 + 1}};
    for (size_t i = 0; i < sizeof overflows / sizeof overflows[0]; i++) {
        char call[80];
        snprintf(call, sizeof call, "calloc(%zu, %zu)", overflows[i].count, overflows[i].size);
        errno = 0;
        void *result = calloc(overflows[i].count, overflows[i].size);
        expect_refused(result, errno, call);
    }
}

static void realloc_group(void)
{
    char *block = realloc(NULL, 100);
    if (!block)
        die("realloc(NULL, 100) returned NULL");
    fill(block, 100, 1);
    /* Through every size, growing then shrinking: the common prefix must survive. */
    size_t kept = 100;
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        size_t size = sizes[i];
        char *moved = realloc(block, size);
        if (!moved) {
            fail("realloc(%p, %zu) returned NULL", (void *)block, size);
            break;
        }
        block = moved;
        size_t common = kept < size ? kept : size;
        CHECK(intact_prefix(block, kept, common, 1), "realloc to %zu bytes lost the first %zu",
              size, common);
        fill(block, size, 1);
        kept = size;
    }
    for (size_t i = SIZE_COUNT; i-- > 0;) {
        char *moved = realloc(block, sizes[i]);
        if (!moved) {
            fail("realloc(%p, %zu) (shrinking) returned NULL", (void *)block, sizes[i]);
            break;
        }
        block = moved;
        CHECK(intact_prefix(block, kept, sizes[i], 1), "shrinking to %zu bytes changed the contents",
              sizes[i]);
        fill(block, sizes[i], 1);
        kept = sizes[i];
    }
    size_t limits[] = {SIZE_MAX, PTRDIFF_LIMIT + 1};
    for (size_t i = 0; i < 2; i++) {
        char call[64];
        snprintf(call, sizeof call, "realloc(p, %zu)", limits[i]);
        errno = 0;
        void *result = realloc(block, limits[i]);
        expect_refused(result, errno, call);
        CHECK(intact(block, kept, 1), "a refused %s changed the block", call);
    }
    errno = 0;
    void *refused = reallocarray(block, SIZE_MAX / 2 + 1, 2);
    expect_refused(refused, errno, "reallocarray(p, SIZE_MAX / 2 + 1, 2)");
    CHECK(intact(block, kept, 1), "a refused reallocarray changed the block");
    void *array = reallocarray(NULL, 10, 10);
    CHECK(array != NULL, "reallocarray(NULL, 10, 10) returned NULL");
    free(array);
    /* realloc(p, 0) frees p and returns NULL (glibc) or returns a minimum block (C17 leaves
     * the choice); either way the result can be freed. */
    void *zeroed = realloc(block, 0);
    free(zeroed);
    /* A large block shrunk to a small one and grown again. */
    char *large = malloc(4 << 20);
    if (!large)
        die("malloc(4 MiB) returned NULL");
    fill(large, 4 << 20, 9);
    char *small = realloc(large, 40);
    if (!small)
        die("realloc(4 MiB block, 40) returned NULL");
    CHECK(intact_prefix(small, 4 << 20, 40, 9), "realloc from 4 MiB to 40 B lost the prefix");
    free(small);
}

static void free_group(void)
{
    errno = EBADF;
    free(NULL);
    CHECK(errno == EBADF, "free(NULL) changed errno to %d", errno);
    /* free preserves errno (POSIX 2024), whatever the block's size and kind. */
    size_t kinds[] = {16, 100, 5000, 70000, 300000, 1 << 20, 64 << 20};
    for (size_t round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            void *block = malloc(kinds[i]);
            if (!block) {
                fail("malloc(%zu) returned NULL", kinds[i]);
                continue;
            }
            memset(block, 1, kinds[i] < 4096 ? kinds[i] : 4096);
            errno = EBADF;
            free(block);
            CHECK(errno == EBADF, "free of a %zu B block changed errno to %d", kinds[i], errno);
        }
    }
    /* Many blocks freed in another order than allocated. */
    void *blocks[512];
    for (size_t i = 0; i < 512; i++)
        blocks[i] = malloc(i * 37 % 3000 + 1);
    for (size_t i = 0; i < 512; i++)
        free(blocks[(i * 7) % 512]);
}

/* Every alignment from 1 to 64 KiB through every alignment entry point. */
static void align_group(void)
{
    size_t requests[] = {1, 100, 5000, 100000};
    for (size_t alignment = 1; alignment <= 65536; alignment <<= 1) {
        for (size_t r = 0; r < 4; r++) {
            size_t size = requests[r];
            void *block = NULL;
            if (alignment >= sizeof(void *)) {
                int code = posix_memalign(&block, alignment, size);
                CHECK(code == 0 && block, "posix_memalign(%zu, %zu) returned %d", alignment, size,
                      code);
                CHECK(aligned(block, alignment), "posix_memalign(%zu, %zu) = %p is misaligned",
                      alignment, size, block);
                if (block)
                    fill(block, size, alignment);
                free(block);
            }
            void *blocks[4] = {aligned_alloc(alignment, size), memalign(alignment, size),
                               NULL, NULL};
            const char *names[2] = {"aligned_alloc", "memalign"};
            for (int k = 0; k < 2; k++) {
                CHECK(blocks[k] && aligned(blocks[k], alignment), "%s(%zu, %zu) = %p", names[k],
                      alignment, size, blocks[k]);
                if (blocks[k])
                    fill(blocks[k], size, r);
                free(blocks[k]);
            }
        }
    }
    long page = sysconf(_SC_PAGESIZE);
    void *page_block = valloc(100);
    CHECK(page_block && aligned(page_block, (size_t)page), "valloc(100) = %p", page_block);
    free(page_block);
    void *rounded = pvalloc(100);
    CHECK(rounded && aligned(rounded, (size_t)page), "pvalloc(100) = %p", rounded);
    CHECK(!rounded || malloc_usable_size(rounded) >= (size_t)page,
          "pvalloc(100) does not round up to a page (usable %zu)", malloc_usable_size(rounded));
    if (rounded)
        memset(rounded, 1, (size_t)page);
    free(rounded);
    /* Not a power of two, or smaller than a pointer: posix_memalign must refuse. */
    size_t invalid[] = {0, 1, 2, 4, 3, 24, 48, 4095, 65537};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        void *untouched = (void *)&invalid;
        int code = posix_memalign(&untouched, invalid[i], 64);
        CHECK(code == EINVAL, "posix_memalign(%zu, 64) returned %d, not EINVAL", invalid[i], code);
        CHECK(untouched == (void *)&invalid, "posix_memalign(%zu, 64) wrote the result", invalid[i]);
        if (code == 0 && untouched != (void *)&invalid)
            free(untouched);
        /* aligned_alloc: NULL with EINVAL (C17), or a block aligned to the next power of two
         * (glibc before 2.38, as memalign). */
        errno = 0;
        void *loose = aligned_alloc(invalid[i], 64);
        size_t next = 1;
        while (next < invalid[i])
            next <<= 1;
        CHECK(loose ? aligned(loose, next) : errno == EINVAL, "aligned_alloc(%zu, 64) = %p, errno %d",
              invalid[i], loose, errno);
        free(loose);
    }
    void *result = NULL;
    int code = posix_memalign(&result, 64, SIZE_MAX);
    CHECK(code == ENOMEM, "posix_memalign(64, SIZE_MAX) returned %d, not ENOMEM", code);
    errno = 0;
    void *huge = aligned_alloc(64, PTRDIFF_LIMIT + 1);
    expect_refused(huge, errno, "aligned_alloc(64, PTRDIFF_MAX + 1)");
}

static void usable_group(void)
{
    CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) = %zu",
          malloc_usable_size(NULL));
    void *blocks[SIZE_COUNT];
    size_t usable[SIZE_COUNT];
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        blocks[i] = malloc(sizes[i]);
        usable[i] = blocks[i] ? malloc_usable_size(blocks[i]) : 0;
        CHECK(usable[i] >= sizes[i], "malloc_usable_size(malloc(%zu)) = %zu", sizes[i], usable[i]);
        /* The whole usable size is the program's: writing it must not hurt a neighbour. */
        if (blocks[i])
            fill(blocks[i], usable[i], i + 100);
    }
    for (size_t i = 0; i < SIZE_COUNT; i++) {
        CHECK(!blocks[i] || intact(blocks[i], usable[i], i + 100),
              "a block of %zu B (usable %zu) was overwritten by a neighbour", sizes[i], usable[i]);
        char *grown = blocks[i] ? realloc(blocks[i], sizes[i] * 2) : NULL;
        CHECK(!grown || malloc_usable_size(grown) >= sizes[i] * 2,
              "usable size %zu after realloc to %zu", grown ? malloc_usable_size(grown) : 0,
              sizes[i] * 2);
        free(grown);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: contract malloc|calloc|realloc|free|align|usable");
    const char *group = argv[1];
    if (!strcmp(group, "malloc"))
        malloc_group();
    else if (!strcmp(group, "calloc"))
        calloc_group();
    else if (!strcmp(group, "realloc"))
        realloc_group();
    else if (!strcmp(group, "free"))
        free_group();
    else if (!strcmp(group, "align"))
        align_group();
    else if (!strcmp(group, "usable"))
        usable_group();
    else
        die("unknown contract group `%s`", group);
    return finish();
}
