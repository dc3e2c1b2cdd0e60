/* Shared helpers of `heapworks torture`'s C programs.
 *
 * Invariants: a program reports a failed check as one line `FAIL: ...` on stderr, written
 * with write(2) from a stack buffer (never through stdio, whose buffers live in the heap
 * under test), and exits 1 when any check failed, 0 when all passed. Cookies: a block's
 * contents are a pattern derived from a 64-bit cookie, so that any overlap between two live
 * blocks, or a block handed out twice, is seen when either is verified. Large blocks are
 * patterned on a sample (the first and last 256 bytes and one byte per page) to keep runs
 * short.
 */
#ifndef HEAPWORKS_TORTURE_H
#define HEAPWORKS_TORTURE_H

#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int torture_failures;

/* Every program dies with the `heapworks torture` that started it: it runs in a process group
 * of its own (so that a hang can be killed as a whole), out of reach of the terminal's Ctrl-C,
 * and a deadlocked run must not outlive an interrupted tool. */
__attribute__((constructor)) static void torture_die_with_parent(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* Writes `prefix`, the formatted message and a newline to `fd` in one write. */
static inline void torture_say(int fd, const char *prefix, const char *format, va_list args)
{
    char line[512];
    int used = snprintf(line, sizeof line, "%s", prefix);
    int more = vsnprintf(line + used, sizeof line - (size_t)used - 1, format, args);
    size_t length = (size_t)used + (more < 0 ? 0 : (size_t)more);
    if (length > sizeof line - 2)
        length = sizeof line - 2;
    line[length++] = '\n';
    ssize_t ignored = write(fd, line, length);
    (void)ignored;
}

/* Records a failed check; the program goes on and exits 1 at the end. Only the first 20
 * are printed: a corrupted heap fails every later check. */
static inline void fail(const char *format, ...)
{
    if (__atomic_fetch_add(&torture_failures, 1, __ATOMIC_RELAXED) >= 20)
        return;
    va_list args;
    va_start(args, format);
    torture_say(2, "FAIL: ", format, args);
    va_end(args);
}

/* A failure after which going on makes no sense. */
static inline void die(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    torture_say(2, "FAIL: ", format, args);
    va_end(args);
    _exit(1);
}

#define CHECK(condition, ...)                                                                  \
    do {                                                                                       \
        if (!(condition))                                                                      \
            fail(__VA_ARGS__);                                                                 \
    } while (0)

/* The exit status of a program: 1 if any check failed. */
static inline int finish(void)
{
    return torture_failures ? 1 : 0;
}

/* splitmix64: the cookie of a block id, and the programs' random numbers. */
static inline uint64_t mix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A random number below `bound` (> 0). */
static inline size_t below(uint64_t *state, size_t bound)
{
    return (size_t)(mix(state) % bound);
}

/* The next patterned position after `at` in a block of `size` bytes. */
static inline size_t pattern_step(size_t at, size_t size)
{
    if (size <= 65536 || at < 255 || at + 257 > size)
        return at + 1;
    size_t next = at + 4096;
    return next < size - 256 ? next : size - 256;
}

static inline uint8_t pattern_byte(uint64_t cookie, size_t at)
{
    return (uint8_t)((cookie >> ((at & 7) * 8)) + (at >> 3) * 131);
}

/* Writes the cookie's pattern into the first `size` bytes of `block`. */
static inline void fill(void *block, size_t size, uint64_t cookie)
{
    uint8_t *bytes = block;
    for (size_t at = 0; at < size; at = pattern_step(at, size))
        bytes[at] = pattern_byte(cookie, at);
}

/* Whether the first `prefix` bytes of a block filled as `size` bytes still hold the
 * cookie's pattern (a realloc keeps only the smaller size's prefix). */
static inline int intact_prefix(const void *block, size_t size, size_t prefix, uint64_t cookie)
{
    const uint8_t *bytes = block;
    for (size_t at = 0; at < prefix; at = pattern_step(at, size))
        if (bytes[at] != pattern_byte(cookie, at))
            return 0;
    return 1;
}

/* Whether the first `size` bytes of `block` still hold the cookie's pattern. */
static inline int intact(const void *block, size_t size, uint64_t cookie)
{
    return intact_prefix(block, size, size, cookie);
}

/* The alignment malloc owes a block of `size` bytes: the largest fundamental alignment (16)
 * or the largest power of two not above the size, whichever is smaller. */
static inline size_t owed_alignment(size_t size)
{
    size_t alignment = 16;
    while (alignment > 1 && alignment > size)
        alignment >>= 1;
    return alignment;
}

static inline int aligned(const void *block, size_t alignment)
{
    return ((uintptr_t)block & (alignment - 1)) == 0;
}

/* Parses a decimal argument or dies naming it. */
static inline size_t number_argument(const char *text, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || *end || end == text)
        die("%s: `%s` is not a number", what, text);
    return (size_t)value;
}

#endif
