/* `misuse KIND SIZE`: one bug of a program, committed on a block of SIZE bytes, then a probe
 * of what the heap became. The caller classifies the run: killed by a signal with a message
 * on stderr naming the fault (caught), killed without one (crashed), exit 3 with
 * `corrupted: ...` on stdout (the probe saw the heap hand out the same memory twice, or
 * memory that is not its own), exit 0 (silent).
 *
 * Nothing here uses stdio: a double free can make stdio's buffer the doubly freed block.
 * Core dumps are off, so that the many aborts cost nothing.
 *
 * The probe: 8 fresh blocks of SIZE bytes must be distinct, must not overlap each other or
 * any memory still in use (a live block, the stack or global buffer that was freed, the
 * address forged into a freed block).
 */
#include "torture.h"

#include <sys/mman.h>
#include <sys/resource.h>

struct range {
    const char *what;
    uintptr_t start, end;
};

static struct range forbidden[4];
static int forbidden_count;
static _Alignas(64) char global_buffer[(1 << 20) + 4096];
static _Alignas(64) char forged_target[256];

static void forbid(const char *what, const void *start, size_t size)
{
    forbidden[forbidden_count++] = (struct range){what, (uintptr_t)start, (uintptr_t)start + size};
}

static void corrupted(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    torture_say(1, "corrupted: ", format, args);
    va_end(args);
    _exit(3);
}

static int overlaps(uintptr_t start, size_t size, const struct range *range)
{
    return start < range->end && range->start < start + size;
}

/* Allocates 8 blocks of `size` and checks that none is memory already in use. */
static void probe(size_t size)
{
    uintptr_t blocks[8];
    for (int i = 0; i < 8; i++) {
        char *block = malloc(size);
        if (!block)
            return;
        blocks[i] = (uintptr_t)block;
        for (int f = 0; f < forbidden_count; f++)
            if (overlaps(blocks[i], size, &forbidden[f]))
                corrupted("malloc(%zu) returned %p, inside %s", size, (void *)block,
                          forbidden[f].what);
        for (int j = 0; j < i; j++) {
            struct range earlier = {"", blocks[j], blocks[j] + size};
            if (overlaps(blocks[i], size, &earlier))
                corrupted("malloc(%zu) returned %p, overlapping the live %p", size, (void *)block,
                          (void *)blocks[j]);
        }
        memset(block, 0x5a, size < 4096 ? size : 4096);
    }
}

static char *allocate(size_t size)
{
    char *block = malloc(size);
    if (!block)
        die("malloc(%zu) returned NULL", size);
    memset(block, 0x11, size < 4096 ? size : 4096);
    return block;
}

/* The page-aligned address range of a fresh mapping of `size` bytes (plus a page each side). */
static char *fresh_mapping(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *base = mmap(NULL, size + 2 * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        die("mmap: %s", strerror(errno));
    return base + page;
}

static void commit(const char *kind, size_t size)
{
    if (!strcmp(kind, "double-free")) {
        char *p = allocate(size);
        free(p);
        free(p);
    } else if (!strcmp(kind, "double-free-delayed")) {
        char *p = allocate(size);
        free(p);
        for (size_t i = 0; i < 64; i++)
            free(allocate(i * 40 + 8));
        free(p);
    } else if (!strcmp(kind, "double-free-interleaved")) {
        char *p = allocate(size), *q = allocate(size);
        free(p);
        free(q);
        free(p);
    } else if (!strcmp(kind, "double-free-reused")) {
        char *p = allocate(size);
        free(p);
        char *q = allocate(size);
        forbid("the block allocated in its place, still live", q, size);
        free(p);
    } else if (!strcmp(kind, "free-stack")) {
        size_t length = size + 64;
        char buffer[length];
        memset(buffer, 0, length);
        forbid("the stack buffer", buffer, length);
        free(buffer + 16);
        probe(size);
    } else if (!strcmp(kind, "free-global")) {
        forbid("the global buffer", global_buffer, sizeof global_buffer);
        free(global_buffer + 16);
    } else if (!strcmp(kind, "free-interior")) {
        char *p = allocate(size);
        forbid("the live block whose interior was freed", p, size);
        free(p + (size / 2 & ~(size_t)15));
    } else if (!strcmp(kind, "free-unaligned")) {
        char *p = allocate(size);
        forbid("the live block", p, size);
        free(p + 1);
    } else if (!strcmp(kind, "free-foreign")) {
        char *mapping = fresh_mapping(size);
        forbid("memory mapped by the program", mapping, size);
        free(mapping + 16);
    } else if (!strcmp(kind, "free-wild")) {
        char *mapping = fresh_mapping(size);
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        munmap(mapping - page, size + 2 * page);
        free(mapping + 16);
    } else if (!strcmp(kind, "overflow-1") || !strcmp(kind, "overflow-32")) {
        char *p = allocate(size), *q = allocate(size);
        size_t length = kind[9] == '1' ? 1 : 32;
        memset(p + malloc_usable_size(p), 0x41, length);
        free(q);
        free(p);
    } else if (!strcmp(kind, "underflow")) {
        char *p = allocate(size);
        memset(p - 16, 0x41, 16);
        free(p);
    } else if (!strcmp(kind, "write-after-free")) {
        char *p = allocate(size), *q = allocate(size);
        forbid("the live neighbour", q, size);
        forbid("the address written into the freed block", forged_target, sizeof forged_target);
        free(p);
        for (size_t word = 0; word < 8; word++)
            ((void **)p)[word] = forged_target;
    } else {
        die("unknown misuse `%s`", kind);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        die("usage: misuse KIND SIZE");
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    size_t size = number_argument(argv[2], "size");
    if (size < 64 || size > (1 << 20))
        die("size must be 64 B to 1 MiB");
    commit(argv[1], size);
    probe(size);
    _exit(0);
}
