/* Four threads allocate blocks of sizes 10000 + thread; the main thread frees them all. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define THREADS 4
#define BLOCKS 100

static void *blocks[THREADS][BLOCKS];

static void *work(void *arg) {
    uintptr_t thread = (uintptr_t)arg;
    for (int i = 0; i < BLOCKS; i++) {
        blocks[thread][i] = malloc(10000 + thread);
    }
    return NULL;
}

int main(void) {
    pthread_t ids[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++) {
        if (pthread_create(&ids[t], NULL, work, (void *)t) != 0) return 1;
    }
    for (int t = 0; t < THREADS; t++) pthread_join(ids[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < BLOCKS; i++) free(blocks[t][i]);
    }
    return 0;
}
