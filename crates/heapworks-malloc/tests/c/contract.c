/* The C contract of heapworks-malloc, run with the library preloaded or linked.
 * Prints one line per group and exits non-zero at the first failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapworks.h"

#include "check.h"

static int aligned(void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* Hides a size from the compiler so it cannot fold the call away. */
static size_t opaque(size_t n) {
    volatile size_t v = n;
    return v;
}

static void zero_and_null(void) {
    void *a = malloc(0), *b = malloc(0);
    CHECK(a && b && a != b);
    CHECK(aligned(a, 16) && malloc_usable_size(a) >= 1);
    free(a);
    free(b);
    free(NULL);
    CHECK(malloc_usable_size(NULL) == 0);
    void *c = realloc(NULL, 40);
    CHECK(c && malloc_usable_size(c) >= 40);
    errno = 0;
    CHECK(realloc(c, 0) == NULL); /* glibc: frees and returns NULL */
    void *d = calloc(0, 10);
    CHECK(d);
    free(d);
    free_sized(malloc(10), 10);
    free_aligned_sized(aligned_alloc(64, 64), 64, 64);
    puts("zero sizes and NULL: ok");
}

static void impossible_sizes(void) {
    size_t huge[] = {SIZE_MAX, (size_t)PTRDIFF_MAX + 1, SIZE_MAX - 4095};
    for (unsigned i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        size_t n = opaque(huge[i]);
        errno = 0;
        CHECK(malloc(n) == NULL && errno == ENOMEM);
        errno = 0;
        CHECK(calloc(1, n) == NULL && errno == ENOMEM);
        void *p = malloc(32);
        errno = 0;
        CHECK(realloc(p, n) == NULL && errno == ENOMEM);
        free(p); /* untouched by the failed realloc */
        errno = 0;
        CHECK(aligned_alloc(64, n) == NULL && errno == ENOMEM);
        errno = 0;
        CHECK(memalign(4096, n) == NULL && errno == ENOMEM);
        errno = 0;
        CHECK(valloc(n) == NULL && errno == ENOMEM);
        void *q = (void *)1;
        CHECK(posix_memalign(&q, 64, n) == ENOMEM && q == (void *)1);
    }
    errno = 0;
    CHECK(calloc(opaque((size_t)1 << 33), opaque((size_t)1 << 33)) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(reallocarray(NULL, opaque(SIZE_MAX / 2), 3) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(pvalloc(opaque(SIZE_MAX - 10)) == NULL && errno == ENOMEM);
    puts("impossible sizes: ok");
}

static void alignment_apis(void) {
    size_t sizes[] = {0, 1, 24, 100, 1000, 5000, 70000, 300000, 3000000};
    for (size_t a = 1; a <= ((size_t)1 << 22); a <<= 1) {
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t n = sizes[i];
            size_t want = a < 16 ? 16 : a;
            void *p = aligned_alloc(a, n);
            CHECK(p && aligned(p, want) && malloc_usable_size(p) >= n);
            memset(p, 0xab, n);
            free(p);
            p = memalign(a, n);
            CHECK(p && aligned(p, want) && malloc_usable_size(p) >= n);
            memset(p, 0xcd, n);
            free(p);
            if (a >= sizeof(void *)) {
                void *q = NULL;
                CHECK(posix_memalign(&q, a, n) == 0 && q && aligned(q, a));
                memset(q, 0xef, n);
                free(q);
            }
        }
    }
    void *q = (void *)1;
    int e = errno = 1234;
    CHECK(posix_memalign(&q, 24, 8) == EINVAL && q == (void *)1 && errno == e);
    CHECK(posix_memalign(&q, 4, 8) == EINVAL && q == (void *)1);
    CHECK(posix_memalign(&q, 0, 8) == EINVAL);
    errno = 0;
    CHECK(aligned_alloc(24, 48) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(aligned_alloc(0, 48) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(memalign(opaque(SIZE_MAX / 2 + 2), 8) == NULL && errno == EINVAL);
    void *r = memalign(48, 8); /* glibc rounds a non-power-of-two up */
    CHECK(r && aligned(r, 64));
    free(r);
    long page = sysconf(_SC_PAGESIZE);
    void *v = valloc(10);
    CHECK(v && aligned(v, page));
    free(v);
    v = pvalloc(10);
    CHECK(v && aligned(v, page) && malloc_usable_size(v) >= (size_t)page);
    free(v);
    puts("alignment APIs: ok");
}

static void usable_sizes(void) {
    for (size_t n = 0; n < 5000; n += 7) {
        unsigned char *p = malloc(n);
        CHECK(p && aligned(p, 16) && malloc_usable_size(p) >= n);
        memset(p, 0x5a, malloc_usable_size(p));
        free(p);
    }
    for (size_t n = 4096; n < ((size_t)64 << 20); n = n * 3 + 1) {
        unsigned char *p = malloc(n);
        CHECK(p && aligned(p, 16) && malloc_usable_size(p) >= n);
        p[0] = 1;
        p[n - 1] = 2;
        free(p);
    }
    puts("usable sizes: ok");
}

static void realloc_in_place(void) {
    /* A block followed by free space grows in place; a shrink never moves. */
    char *pad = malloc(200000); /* fresh medium block: the heap's free space follows it */
    char *p = realloc(pad, 200000 + 4096);
    CHECK(p == pad);
    char *s = realloc(p, 1000);
    CHECK(s == p);
    free(s);
    /* Growing a small block copies the contents wherever it goes. */
    char *g = malloc(16);
    for (int i = 0; i < 16; i++) g[i] = (char)i;
    for (size_t n = 32; n < 100000; n += 16) {
        g = realloc(g, n);
        CHECK(g);
        for (int i = 0; i < 16; i++) CHECK(g[i] == (char)i);
        g[n - 1] = 7;
    }
    /* Large blocks grow with mremap, keeping contents. */
    size_t big = 1 << 20;
    char *l = malloc(big);
    memset(l, 0x11, big);
    l = realloc(l, 16 * big);
    CHECK(l && l[big - 1] == 0x11 && l[0] == 0x11);
    l = realloc(l, 2 * big);
    CHECK(l && l[big - 1] == 0x11 && malloc_usable_size(l) >= 2 * big);
    l = realloc(l, 100); /* back into the heap */
    CHECK(l && l[99] == 0x11);
    free(l);
    free(g);
    puts("realloc in place: ok");
}

static void calloc_zeroes(void) {
    size_t sizes[] = {8, 64, 1000, 4000, 100000, 1000000, 20000000};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        for (int round = 0; round < 3; round++) {
            unsigned char *dirty = malloc(n);
            memset(dirty, 0xff, n);
            free(dirty);
            unsigned char *z = calloc(1, n);
            CHECK(z);
            for (size_t k = 0; k < n; k++) CHECK(z[k] == 0);
            memset(z, 0xee, n);
            free(z);
        }
    }
    puts("calloc zeroes recycled memory: ok");
}

static void free_keeps_errno(void) {
    size_t sizes[] = {10, 2000, 100000, 5000000};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        void *p = malloc(sizes[i]);
        errno = 4321;
        free(p);
        CHECK(errno == 4321);
    }
    /* Enough large blocks to overflow the cache and unmap some. */
    void *many[40];
    for (int i = 0; i < 40; i++) many[i] = malloc((size_t)(i + 1) << 20);
    for (int i = 0; i < 40; i++) {
        errno = 77;
        free(many[i]);
        CHECK(errno == 77);
    }
    puts("free keeps errno: ok");
}

int main(void) {
    zero_and_null();
    impossible_sizes();
    alignment_apis();
    usable_sizes();
    realloc_in_place();
    calloc_zeroes();
    free_keeps_errno();
    return 0;
}
