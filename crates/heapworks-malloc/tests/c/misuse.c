/* One misuse of the malloc API per run, for tests/misuse.rs: the library must abort with a
 * message naming the fault and the address (a run that returns from main was not caught).
 *   misuse double SIZE    a block freed twice in a row
 *   misuse delayed SIZE   a block freed, another freed, then the first again
 *   misuse stack          a pointer into the stack freed
 *   misuse global         a pointer into a global array freed
 *   misuse wild           a pointer into memory just unmapped freed
 *   misuse usable         malloc_usable_size of stack and global pointers: 0 (not a misuse
 *                         that aborts: prints `usable: ok`)
 *   misuse written SIZE   a block freed, then written (a use after free), then 5000 blocks of
 *                         the same size allocated and freed (so secure mode's quarantine lets
 *                         the first one go and finds the write)
 *   misuse overflow SIZE  two blocks; the first written 16 bytes past its usable size (into
 *                         the second's header or first bytes), then both freed
 *   misuse steer SIZE     a use after free writes a global's address into a freed block's
 *                         first word; prints `steered` if a later malloc returns that address
 *                         (the free lists' links are mangled: it must not)
 *   misuse lookalike SIZE not a misuse: a block's second word set to what a freed block of
 *                         the same size holds there (the free mark), then the block resized
 *                         and freed; must run through and print `lookalike: ok` (a struct's
 *                         padding copied from the stack can hold the mark by chance)
 *   misuse late SIZE      in a thread-exit destructor that runs after the library's own (so
 *                         the thread's cache is gone): a block allocated, filled, freed
 *                         (prints `late: wiped` if its first word reads zero after the free,
 *                         `late: kept` otherwise), then freed again */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"

static char global_bytes[256];

/* Hides the pointer's origin from the compiler, which would warn about (or remove) a free of
 * a stack or global object. */
static void *launder(void *ptr) {
    __asm__ volatile("" : "+r"(ptr));
    return ptr;
}

static size_t late_size;

/* A destructor of a key created after the library's: glibc runs it after the library has
 * retired the thread's cache. */
static void free_late(void *unused) {
    (void)unused;
    uintptr_t *p = malloc(late_size);
    memset(p, 0x55, late_size);
    free(p);
    printf("late: %s\n", ((volatile uintptr_t *)launder(p))[0] == 0 ? "wiped" : "kept");
    fflush(stdout);
    free(launder(p));
}

static void *exit_late(void *unused) {
    pthread_key_t key;
    CHECK(pthread_key_create(&key, free_late) == 0);
    CHECK(pthread_setspecific(key, &key) == 0);
    free(launder(malloc(late_size)));
    return unused;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    size_t size = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    char stack_bytes[256];
    memset(stack_bytes, 0, sizeof stack_bytes);
    if (!strcmp(argv[1], "double")) {
        char *p = malloc(size);
        free(p);
        free(launder(p));
    } else if (!strcmp(argv[1], "delayed")) {
        char *p = malloc(size), *q = malloc(size);
        free(p);
        free(q);
        free(launder(p));
    } else if (!strcmp(argv[1], "interior")) {
        char *p = malloc(size);
        memset(p, 0x11, size);
        free(launder(p + (size / 2 & ~(size_t)15)));
    } else if (!strcmp(argv[1], "misaligned")) {
        char *p = malloc(size);
        free(launder(p + 1));
    } else if (!strcmp(argv[1], "stack")) {
        free(launder(stack_bytes + 64));
    } else if (!strcmp(argv[1], "global")) {
        free(launder(global_bytes + 64));
    } else if (!strcmp(argv[1], "written")) {
        char *p = malloc(size);
        free(p);
        ((char *)launder(p))[size / 2] = 1;
        for (int i = 0; i < 5000; i++) free(launder(malloc(size)));
    } else if (!strcmp(argv[1], "overflow")) {
        char *p = malloc(size), *q = malloc(size);
        memset(launder(p), 'A', malloc_usable_size(p) + 16);
        free(q);
        free(p);
        for (int i = 0; i < 5000; i++) free(launder(malloc(size)));
    } else if (!strcmp(argv[1], "steer")) {
        char *p = malloc(size);
        free(p);
        *(void **)launder(p) = global_bytes + 64;
        /* Laundered: the compiler takes a fresh block to differ from every object's address. */
        void *first = launder(malloc(size)), *second = launder(malloc(size));
        void *target = launder(global_bytes + 64);
        printf("%s\n", first == target || second == target ? "steered" : "not steered");
        return 0;
    } else if (!strcmp(argv[1], "wild")) {
        char *gone = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(gone != MAP_FAILED);
        munmap(gone, 1 << 16);
        free(launder(gone + 4096));
    } else if (!strcmp(argv[1], "lookalike")) {
        uintptr_t *freed = malloc(size);
        free(freed);
        uintptr_t mark = ((volatile uintptr_t *)launder(freed))[1];
        uintptr_t *live = malloc(size);
        live[1] = mark;
        live = realloc(launder(live), size + size / 2);
        CHECK(live != NULL);
        live[1] = mark;
        free(launder(live));
        printf("lookalike: ok\n");
        return 0;
    } else if (!strcmp(argv[1], "late")) {
        late_size = size;
        /* The library makes its thread-exit key with the first thread cache: before ours. */
        free(launder(malloc(size)));
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, exit_late, NULL) == 0);
        CHECK(pthread_join(thread, NULL) == 0);
    } else if (!strcmp(argv[1], "usable")) {
        CHECK(malloc_usable_size(launder(stack_bytes + 64)) == 0);
        CHECK(malloc_usable_size(launder(global_bytes + 64)) == 0);
        printf("usable: ok\n");
        return 0;
    } else {
        return 2;
    }
    printf("not caught\n");
    return 0;
}
