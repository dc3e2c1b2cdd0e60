/* `patterns SCENARIO REPEAT`: seed 004's patterns.
 *
 * - `realloc`: a block grown by realloc one page at a time from 2 pages to 4 MiB, then
 *   shrunk back a page at a time, then doubled from 2 pages to 64 MiB and halved back, REPEAT
 *   times. Contents must survive every step (checked on a sample). Prints, for the metrics,
 *   how many steps kept the address (`in place`) and how many moved the block (`copied`):
 *   `grow_steps N`, `grow_moves N`, `shrink_steps N`, `shrink_moves N`.
 * - `sizes`: free(malloc(n)) for n = 50 B, 500 B, ... 50 MB, REPEAT times each; every block
 *   aligned, its first and last byte writable, its usable size at least n.
 */
#include "torture.h"

static size_t grow_steps, grow_moves, shrink_steps, shrink_moves;

/* Resizes `*block` from `from` to `to` bytes, checking the contents that must survive. */
static void resize(char **block, size_t from, size_t to, uint64_t cookie)
{
    char *moved = realloc(*block, to);
    if (!moved)
        die("realloc from %zu to %zu B returned NULL", from, to);
    size_t common = from < to ? from : to;
    CHECK(intact_prefix(moved, from, common, cookie), "realloc from %zu to %zu B lost the contents", from, to);
    int kept = moved == *block;
    fill(moved, to, cookie);
    if (to > from) {
        grow_steps++;
        grow_moves += !kept;
    } else {
        shrink_steps++;
        shrink_moves += !kept;
    }
    *block = moved;
}

static void realloc_scenario(size_t repeat)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t round = 0; round < repeat; round++) {
        uint64_t cookie = round + 1;
        size_t size = 2 * page;
        char *block = malloc(size);
        if (!block)
            die("malloc(%zu) returned NULL", size);
        fill(block, size, cookie);
        for (; size < (4 << 20); size += page)
            resize(&block, size, size + page, cookie);
        for (; size > 2 * page; size -= page)
            resize(&block, size, size - page, cookie);
        for (; size < (64 << 20); size *= 2)
            resize(&block, size, size * 2, cookie);
        for (; size > 2 * page; size /= 2)
            resize(&block, size, size / 2, cookie);
        free(block);
    }
    printf("grow_steps %zu\ngrow_moves %zu\nshrink_steps %zu\nshrink_moves %zu\n", grow_steps,
           grow_moves, shrink_steps, shrink_moves);
}

static void sizes_scenario(size_t repeat)
{
    for (size_t size = 50; size <= 50000000; size *= 10) {
        for (size_t i = 0; i < repeat; i++) {
            char *block = malloc(size);
            if (!block)
                die("malloc(%zu) returned NULL", size);
            CHECK(aligned(block, 16), "malloc(%zu) = %p is not 16-aligned", size, (void *)block);
            CHECK(malloc_usable_size(block) >= size, "malloc_usable_size(malloc(%zu)) = %zu", size,
                  malloc_usable_size(block));
            block[0] = 1;
            block[size - 1] = 2;
            free(block);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        die("usage: patterns realloc|sizes REPEAT");
    size_t repeat = number_argument(argv[2], "repeat");
    if (!strcmp(argv[1], "realloc"))
        realloc_scenario(repeat);
    else if (!strcmp(argv[1], "sizes"))
        sizes_scenario(repeat);
    else
        die("unknown scenario `%s`", argv[1]);
    return finish();
}
