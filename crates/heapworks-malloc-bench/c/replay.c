/* Replays an allocation trace in text form through the C malloc, for `heapworks bench
 * --malloc` (the allocator under test LD_PRELOADed; glibc's when nothing is preloaded).
 *
 *   replay TRACE.script
 *
 * The text form is crates/heapworks-trace's: one request a line, `a <id> <size>` malloc,
 * `c <id> <size>` calloc, `m <id> <size> <align>` aligned, `r <id> <size>` realloc,
 * `f <id>` free, `t <thread>` and `#` comments ignored. Requests run in the file's order on
 * one thread. Ids behave like C pointer variables: a request on an id that is not live acts
 * on NULL, and allocating a live id leaks its old block. Every new byte range is touched
 * once per page (a write at its start, every 4 KiB and at its end), as a program filling
 * its blocks would, so that the peak RSS shows the pages the allocator hands out.
 *
 * The trace is read and parsed into memory from mmap (not from the allocator under test)
 * before the clock starts; only the requests are timed. Prints `requests <n> live <blocks
 * live at the end>` and `ns <time of the requests>`; exits 1 when an allocation fails. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct request {
    char kind;
    uint32_t id;
    uint64_t size;
    uint64_t align;
};

struct block {
    unsigned char *p;
    uint64_t size;
    int live;
};

static void *map_zeroed(size_t bytes) {
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

static const char *map_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        perror(path);
        exit(2);
    }
    *len = (size_t)st.st_size;
    const char *text = mmap(NULL, *len ? *len : 1, PROT_READ, MAP_PRIVATE, fd, 0);
    if (text == MAP_FAILED) {
        perror(path);
        exit(2);
    }
    close(fd);
    return text;
}

/* Parses the request on the line at `line` (up to `end`); returns 0 for lines that are no
 * request, 1 for a request, and exits on a malformed one. */
static int parse_line(const char *line, const char *end, struct request *r) {
    while (line < end && (*line == ' ' || *line == '\t')) line++;
    if (line == end || *line == '#' || *line == 't' || *line == '\r') return 0;
    r->kind = *line++;
    if (!strchr("acmrf", r->kind)) {
        fprintf(stderr, "unknown request `%c`\n", r->kind);
        exit(2);
    }
    char *next;
    r->id = (uint32_t)strtoul(line, &next, 10);
    r->size = r->kind == 'f' ? 0 : strtoull(next, &next, 10);
    r->align = r->kind == 'm' ? strtoull(next, &next, 10) : 0;
    return 1;
}

/* Requests of the trace, and the largest id, read into mapped memory. */
static struct request *parse(const char *text, size_t len, size_t *count, uint32_t *max_id) {
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    struct request *requests = map_zeroed(lines * sizeof *requests);
    *count = 0;
    *max_id = 0;
    for (const char *line = text, *end = text + len; line < end;) {
        const char *stop = memchr(line, '\n', (size_t)(end - line));
        if (!stop) stop = end;
        if (parse_line(line, stop, &requests[*count])) {
            if (requests[*count].id > *max_id) *max_id = requests[*count].id;
            (*count)++;
        }
        line = stop + 1;
    }
    return requests;
}

static void touch(unsigned char *p, uint64_t from, uint64_t to) {
    if (from >= to) return;
    for (uint64_t offset = from; offset < to; offset += 4096) p[offset] = 1;
    p[to - 1] = 1;
}

static unsigned char *aligned(uint64_t size, uint64_t align) {
    void *p = NULL;
    if (align <= sizeof(void *)) return malloc(size);
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

static void run(const struct request *r, struct block *blocks) {
    struct block *b = &blocks[r->id];
    unsigned char *p;
    switch (r->kind) {
    case 'f':
        if (b->live) free(b->p);
        b->live = 0;
        return;
    case 'r':
        p = realloc(b->live ? b->p : NULL, r->size);
        if (p) touch(p, b->live && b->size < r->size ? b->size : 0, r->size);
        break;
    case 'c':
        p = calloc(1, r->size);
        break;
    case 'm':
        p = aligned(r->size, r->align);
        if (p) touch(p, 0, r->size);
        break;
    default:
        p = malloc(r->size);
        if (p) touch(p, 0, r->size);
    }
    if (!p && r->size) {
        fprintf(stderr, "allocation of %llu bytes failed\n", (unsigned long long)r->size);
        exit(1);
    }
    *b = (struct block){p, r->size, 1};
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: replay TRACE.script\n");
        return 2;
    }
    size_t len, count;
    uint32_t max_id;
    const char *text = map_file(argv[1], &len);
    struct request *requests = parse(text, len, &count, &max_id);
    struct block *blocks = map_zeroed(((size_t)max_id + 1) * sizeof *blocks);
    uint64_t start = now_ns();
    for (size_t i = 0; i < count; i++) run(&requests[i], blocks);
    uint64_t elapsed = now_ns() - start;
    size_t live = 0;
    for (size_t id = 0; id <= max_id; id++) {
        if (blocks[id].live) {
            free(blocks[id].p);
            live++;
        }
    }
    printf("requests %zu live %zu\nns %llu\n", count, live, (unsigned long long)elapsed);
    return 0;
}
