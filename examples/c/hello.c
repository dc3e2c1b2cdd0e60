/* A C program linked with heapworks-malloc through pkg-config (see Makefile): every malloc-family
 * call of the process, the C library's own included, goes to heapworks. heapworks.h declares C23's
 * free_sized, which older C libraries' headers lack. */
#include <heapworks.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    /* A growing buffer: realloc in place where heapworks can. */
    size_t len = 0, cap = 16;
    char *text = malloc(cap);
    if (text == NULL) return 1;
    for (int i = 0; i < 1000; i++) {
        char word[16];
        int n = snprintf(word, sizeof word, "%d ", i);
        if (len + (size_t)n + 1 > cap) {
            char *grown = realloc(text, cap * 2);
            if (grown == NULL) { free(text); return 1; }
            text = grown;
            cap *= 2;
        }
        memcpy(text + len, word, (size_t)n + 1);
        len += (size_t)n;
    }

    int *zeros = calloc(1000, sizeof *zeros);
    void *page = aligned_alloc(4096, 8192);
    if (zeros == NULL || page == NULL) return 1;
    int all_zero = 1;
    for (int i = 0; i < 1000; i++) all_zero &= zeros[i] == 0;

    printf("C: %zu bytes of text in a %zu-byte buffer (usable %zu), calloc zeroed: %s, "
           "aligned_alloc(4096) aligned: %s\n",
           len, cap, malloc_usable_size(text), all_zero ? "yes" : "no",
           ((size_t)page % 4096 == 0) ? "yes" : "no");

    free_sized(zeros, 1000 * sizeof *zeros);
    free(page);
    free(text);
    return all_zero && (size_t)page % 4096 == 0 ? 0 : 1;
}
