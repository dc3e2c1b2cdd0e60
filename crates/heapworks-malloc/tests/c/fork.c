/* fork in the situations that deadlock a malloc whose fork handlers take its locks carelessly.
 *   fork stdio   threads flush every stream (fflush(NULL), which holds stdio's list lock while
 *                it takes each stream's lock), read lines (getline reallocs under its stream's
 *                lock) and allocate, while the main thread forks 200 times; each child
 *                allocates, frees and exits
 *   fork signal  a single-threaded process allocates, frees and forks in a loop while another
 *                process sends it SIGUSR1 and SIGUSR2, whose handlers fork too (so a fork
 *                interrupts malloc, free, or another fork); 2000 signals handled
 * Prints `<mode>: ok` and exits 0, or exits 1 at the first failed check; a deadlock hangs (the
 * test's timeout catches it). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static atomic_int stop;

/* Forks, and in the child allocates a little and exits; the parent reaps it. */
static void fork_and_reap(void) {
    pid_t pid = fork();
    if (pid == 0) {
        void *p = malloc(100);
        free(p);
        _exit(p ? 0 : 3);
    }
    CHECK(pid > 0);
    int status;
    while (waitpid(pid, &status, 0) < 0) CHECK(errno == EINTR);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void *flusher(void *unused) {
    (void)unused;
    while (!atomic_load(&stop)) fflush(NULL);
    return NULL;
}

/* Reads lines of growing length from a temporary file, over and over: getline reallocs its
 * buffer while it holds the stream's lock. */
static void *reader(void *unused) {
    (void)unused;
    FILE *file = tmpfile();
    CHECK(file);
    for (int i = 1; i < 400; i++) fprintf(file, "%*d\n", i * 37, i);
    while (!atomic_load(&stop)) {
        rewind(file);
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, file) > 0) {
            free(line);
            line = NULL;
            cap = 0;
        }
        free(line);
    }
    fclose(file);
    return NULL;
}

static void *allocator(void *unused) {
    (void)unused;
    unsigned seed = 1;
    void *held[64] = {0};
    while (!atomic_load(&stop)) {
        unsigned i = rand_r(&seed) % 64;
        free(held[i]);
        held[i] = malloc(rand_r(&seed) % 5000);
    }
    for (int i = 0; i < 64; i++) free(held[i]);
    return NULL;
}

static void stdio_mode(void) {
    pthread_t threads[3];
    void *(*bodies[3])(void *) = {flusher, reader, allocator};
    for (int i = 0; i < 3; i++) CHECK(pthread_create(&threads[i], NULL, bodies[i], NULL) == 0);
    for (int i = 0; i < 200; i++) fork_and_reap();
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++) CHECK(pthread_join(threads[i], NULL) == 0);
}

static volatile sig_atomic_t handled;

static void forking_handler(int signal) {
    (void)signal;
    int saved = errno;
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid > 0) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    handled = handled + 1;
    errno = saved;
}

static void signal_mode(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = forking_handler;
    sigemptyset(&action.sa_mask);
    CHECK(sigaction(SIGUSR1, &action, NULL) == 0);
    CHECK(sigaction(SIGUSR2, &action, NULL) == 0);
    pid_t parent = getpid();
    pid_t sender = fork();
    CHECK(sender >= 0);
    if (sender == 0) {
        for (;;) {
            if (kill(parent, SIGUSR1) != 0 || kill(parent, SIGUSR2) != 0) _exit(0);
            usleep(100);
        }
    }
    unsigned seed = 2;
    void *held[32] = {0};
    for (unsigned round = 0; handled < 2000; round++) {
        unsigned i = rand_r(&seed) % 32;
        free(held[i]);
        held[i] = malloc(rand_r(&seed) % 3000);
        if (round % 64 == 0) fork_and_reap();
    }
    kill(sender, SIGKILL);
    waitpid(sender, NULL, 0);
    for (int i = 0; i < 32; i++) free(held[i]);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (!strcmp(argv[1], "stdio")) stdio_mode();
    else if (!strcmp(argv[1], "signal")) signal_mode();
    else return 2;
    printf("%s: ok\n", argv[1]);
    return 0;
}
