/* Every allocator entry point the shim hooks, once, with sizes the test checks exactly. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

int main(void) {
    void *a = malloc(1001);
    void *b = calloc(7, 13);
    a = realloc(a, 2002);
    void *c = NULL;
    if (posix_memalign(&c, 64, 3003) != 0) return 1;
    void *d = aligned_alloc(256, 4096);
    void *e = memalign(32, 5005);
    void *f = valloc(6006);
    void *g = pvalloc(100);
    void *h = reallocarray(NULL, 10, 11);
    h = reallocarray(h, 20, 11);
    if (malloc_usable_size(a) < 2002) return 2;
    void *volatile nothing = NULL; /* volatile: the compiler would drop free(NULL) */
    free(nothing);
    free(b);
    free(a);
    free(c);
    free(d);
    free(e);
    free(f);
    free(g);
    if (realloc(h, 0) != NULL) return 3; /* glibc frees h */
    if (malloc(SIZE_MAX / 2) != NULL) return 4;
    if (errno != ENOMEM) return 5;
    void *unused = NULL;
    if (posix_memalign(&unused, 24, 10) != EINVAL) return 6; /* refused: not a call */
    errno = 4242; /* the shim's own system calls must not show through */
    void *x = malloc(10);
    if (errno != 4242) return 7;
    free(x);
    if (errno != 4242) return 8;
    return 0;
}
