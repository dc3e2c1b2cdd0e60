/* Runs a program and measures it, for `heapworks bench --malloc`:
 *
 *   measure RESULT_FILE PROGRAM ARGS...
 *
 * forks, execs PROGRAM with the environment as it is (LD_PRELOAD included), waits for it with
 * wait4 and writes `<exit code> <wall ns> <ru_maxrss KiB>` to RESULT_FILE, the exit code as a
 * shell gives it (128 + N when killed by signal N); exits 0 unless it could not measure.
 * The child is forked from this small process rather than from the benchmark itself because
 * the kernel counts the resident set a process had before its exec in the peak (ru_maxrss)
 * of the program it becomes. ru_maxrss covers the program and the children it waited for:
 * the largest process of the run. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: measure RESULT_FILE PROGRAM ARGS...\n");
        return 2;
    }
    long long start = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {
        if (errno == EINTR) continue;
        perror("wait4");
        return 2;
    }
    long long wall = now_ns() - start;
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 2;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fprintf(out, "%d %lld %ld\n", code, wall, usage.ru_maxrss);
    return fclose(out) == 0 ? 0 : 2;
}
