/* heapworks-malloc: a drop-in C malloc over the heapworks engine.
 *
 * Use it with LD_PRELOAD=libheapworks_malloc.so, or link libheapworks_malloc.so / .a.
 * These are the standard declarations (glibc's malloc family plus C23's free_sized and
 * free_aligned_sized); the header exists so programs can name the C23 functions on older
 * C libraries. Every block is 16-byte aligned; failures return NULL with errno ENOMEM
 * (impossible sizes, no memory) or EINVAL (bad alignment); free keeps errno.
 *
 * Environment: HEAPWORKS_STATS=1 prints statistics at exit; HEAPWORKS_LARGE_CACHE_MIB
 * (default 64) bounds the freed large blocks kept mapped in the shared cache (each thread also
 * keeps its last freed one, up to 32 MiB); HEAPWORKS_TCACHE_KIB (default 512) bounds one
 * thread's cache of small and medium blocks.
 */
#ifndef HEAPWORKS_H
#define HEAPWORKS_H

#include <stddef.h>
/* The C library's own declarations come first: in C++, glibc marks them noexcept (__THROW),
 * and a redeclaration must say the same. */
#include <stdlib.h>

#ifdef __THROW
#define HEAPWORKS_NOTHROW __THROW
#else
#define HEAPWORKS_NOTHROW
#endif

#ifdef __cplusplus
extern "C" {
#endif

void *malloc(size_t size) HEAPWORKS_NOTHROW;
void free(void *ptr) HEAPWORKS_NOTHROW;
void *calloc(size_t count, size_t size) HEAPWORKS_NOTHROW;
void *realloc(void *ptr, size_t size) HEAPWORKS_NOTHROW;
void *reallocarray(void *ptr, size_t count, size_t size) HEAPWORKS_NOTHROW;
int posix_memalign(void **memptr, size_t alignment, size_t size) HEAPWORKS_NOTHROW;
void *aligned_alloc(size_t alignment, size_t size) HEAPWORKS_NOTHROW;
void *memalign(size_t alignment, size_t size) HEAPWORKS_NOTHROW;
void *valloc(size_t size) HEAPWORKS_NOTHROW;
void *pvalloc(size_t size) HEAPWORKS_NOTHROW;
size_t malloc_usable_size(void *ptr) HEAPWORKS_NOTHROW;
void free_sized(void *ptr, size_t size) HEAPWORKS_NOTHROW;
void free_aligned_sized(void *ptr, size_t alignment, size_t size) HEAPWORKS_NOTHROW;

#ifdef __cplusplus
}
#endif

#endif /* HEAPWORKS_H */
