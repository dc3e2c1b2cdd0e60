/* malloc under an address-space limit (RLIMIT_AS), set before the program starts (the test's
 * `ulimit -v`) or by the program itself once malloc is running.
 *   limits small       every size from 1 B to 100 kB (step 97 B), each block written and kept
 *                      until the end: nothing may fail
 *   limits huge MIB    a small block (as any program has before its big one), then one block
 *                      of MIB MiB, its first and last byte written, then freed
 *   limits later KIB   allocates blocks of every kind first, then lowers its own RLIMIT_AS to
 *                      KIB KiB and allocates a 200 MiB block and 20 MiB of 100 kB blocks
 *   limits exhaust     allocates 1 MiB blocks until malloc fails: errno must be ENOMEM; frees
 *                      them all, then the same count must succeed again (recovery), and small
 *                      blocks too
 * Prints `<mode>: ok` and exits 0, or exits 1 at the first failed check. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"

static void small(void) {
    enum { COUNT = 100000 / 97 + 1 };
    static char *blocks[COUNT];
    for (int i = 0; i < COUNT; i++) {
        size_t size = 1 + (size_t)i * 97;
        blocks[i] = malloc(size);
        CHECK(blocks[i] != NULL);
        blocks[i][0] = 1;
        blocks[i][size - 1] = 2;
    }
    for (int i = 0; i < COUNT; i++) free(blocks[i]);
}

static void huge(size_t mib) {
    char *first = malloc(10);
    CHECK(first != NULL);
    size_t size = mib << 20;
    char *block = malloc(size);
    CHECK(block != NULL);
    block[0] = 1;
    block[size - 1] = 2;
    free(block);
    free(first);
}

static void later(long kib) {
    /* Every kind of block first, so everything the library reserves is reserved. */
    void *early[5] = {malloc(16), malloc(300), malloc(900), malloc(50000), malloc(1 << 20)};
    for (int i = 0; i < 5; i++) CHECK(early[i] != NULL);
    struct rlimit limit = {.rlim_cur = (rlim_t)kib << 10, .rlim_max = (rlim_t)kib << 10};
    CHECK(setrlimit(RLIMIT_AS, &limit) == 0);
    huge(200);
    enum { COUNT = 200 };
    static void *blocks[COUNT];
    for (int i = 0; i < COUNT; i++) {
        blocks[i] = malloc(100000);
        CHECK(blocks[i] != NULL);
        memset(blocks[i], i, 100000);
    }
    for (int i = 0; i < COUNT; i++) free(blocks[i]);
    for (int i = 0; i < 5; i++) free(early[i]);
}

static void exhaust(void) {
    enum { MAX = 1 << 16 };
    static void *blocks[MAX];
    int count = 0;
    for (; count < MAX; count++) {
        errno = 0;
        blocks[count] = malloc(1 << 20);
        if (blocks[count] == NULL) break;
        memset(blocks[count], 1, 4096);
    }
    CHECK(count < MAX);
    CHECK(errno == ENOMEM);
    CHECK(count > 10);
    for (int i = 0; i < count; i++) free(blocks[i]);
    for (int i = 0; i < count; i++) {
        blocks[i] = malloc(1 << 20);
        CHECK(blocks[i] != NULL);
    }
    for (int i = 0; i < count; i++) free(blocks[i]);
    small();
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (!strcmp(argv[1], "small")) small();
    else if (!strcmp(argv[1], "huge") && argc == 3) huge(strtoul(argv[2], NULL, 10));
    else if (!strcmp(argv[1], "later") && argc == 3) later(strtol(argv[2], NULL, 10));
    else if (!strcmp(argv[1], "exhaust")) exhaust();
    else return 2;
    printf("%s: ok\n", argv[1]);
    return 0;
}
