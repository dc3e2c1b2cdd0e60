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

#ifdef __cplusplus
extern "C" {
#endif

void *malloc(size_t size);
void free(void *ptr);
void *calloc(size_t count, size_t size);
void *realloc(void *ptr, size_t size);
void *reallocarray(void *ptr, size_t count, size_t size);
int posix_memalign(void **memptr, size_t alignment, size_t size);
void *aligned_alloc(size_t alignment, size_t size);
void *memalign(size_t alignment, size_t size);
void *valloc(size_t size);
void *pvalloc(size_t size);
size_t malloc_usable_size(void *ptr);
void free_sized(void *ptr, size_t size);
void free_aligned_sized(void *ptr, size_t alignment, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* HEAPWORKS_H */
