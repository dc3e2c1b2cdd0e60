/* `fork SCENARIO FORKS`: fork, signals and process creation while the heap is busy. A run
 * that deadlocks never exits: the caller's timeout records the hang and kills the process
 * group (every child forked here stays in it).
 *
 * - `stdio`: one thread mallocs and frees, one flushes every stream (fflush(NULL) holds the
 *   list of streams, then each stream's lock), one reads lines with getline from a file (which
 *   reallocs its buffer under that file's lock), while the main thread forks; each child
 *   mallocs, frees, writes through stdio and exits. A malloc whose fork handler takes its
 *   lock before stdio's deadlocks here.
 * - `signal`: another process sends SIGUSR1 or SIGUSR2 once per round of the main thread, at
 *   a random moment; both handlers fork (the child exits at once), while the main thread
 *   mallocs, frees and, every fourth round, forks itself, so a handler's fork can interrupt
 *   malloc, free or another fork. The process is single-threaded, as POSIX asks of a fork in
 *   a signal handler.
 * - `single`: a single-threaded process forks with live blocks; the child verifies, frees and
 *   allocates, the parent too.
 * - `spawn`: posix_spawn and vfork + exec of this program (which mallocs in the new image)
 *   while a thread mallocs.
 */
#include "torture.h"

#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>

extern char **environ;

static volatile int stopping;

/* Waits for `pid`; dies when it did not exit with status 0. */
static void reap(pid_t pid, const char *what)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die("waitpid(%s): %s", what, strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("%s ended with status 0x%x", what, status);
}

/* A child's work after a fork: the heap must be usable, and stdio too. */
static void child_allocates(void)
{
    for (size_t size = 8; size <= (1 << 20); size *= 4) {
        char *block = malloc(size);
        if (!block)
            _exit(2);
        fill(block, size, size);
        if (!intact(block, size, size))
            _exit(3);
        free(block);
    }
}

static void *churn(void *unused)
{
    (void)unused;
    uint64_t rng = 7;
    char *held[64] = {0};
    while (!stopping) {
        size_t slot = below(&rng, 64);
        free(held[slot]);
        size_t size = below(&rng, 100) < 95 ? below(&rng, 2000) + 1 : below(&rng, 300000) + 1;
        held[slot] = malloc(size);
        if (held[slot])
            held[slot][size - 1] = 1;
    }
    for (size_t i = 0; i < 64; i++)
        free(held[i]);
    return NULL;
}

/* Sleeps a moment between two holds of a stdio lock. glibc's stdio locks are not fair: a
 * thread that takes its lock again at once starves the one it woke, and on a loaded machine
 * the reader kept a FILE lock, so the flusher the list lock, so `fork` waited, for seconds
 * (glibc's malloc as much as ours, with no deadlock). The locks are still held in the same
 * chain while the threads work. */
static void let_waiters_in(void)
{
    usleep(10);
}

static void *flusher(void *stream)
{
    while (!stopping) {
        fprintf(stream, "a line that leaves data in the buffer\n");
        fflush(NULL);
        let_waiters_in();
    }
    return NULL;
}

static void *reader(void *stream)
{
    while (!stopping) {
        char *line = NULL;
        size_t capacity = 0;
        while (getline(&line, &capacity, stream) > 0 && !stopping) {
            /* A fresh buffer every few lines, so that getline mallocs and reallocs again. */
            if (capacity > 4096) {
                free(line);
                line = NULL;
                capacity = 0;
            }
            let_waiters_in();
        }
        free(line);
        rewind(stream);
    }
    return NULL;
}

/* A file of lines from 1 to 20000 bytes long. */
static FILE *long_lines(void)
{
    FILE *file = tmpfile();
    if (!file)
        die("tmpfile: %s", strerror(errno));
    for (size_t length = 1; length < 20000; length = length * 3 / 2 + 1) {
        for (size_t i = 0; i < length; i++)
            fputc('a' + (int)(i % 26), file);
        fputc('\n', file);
    }
    fflush(file);
    rewind(file);
    return file;
}

static void stdio_scenario(size_t forks)
{
    FILE *sink = fopen("/dev/null", "w");
    FILE *lines = long_lines();
    if (!sink)
        die("fopen(/dev/null): %s", strerror(errno));
    pthread_t threads[3];
    pthread_create(&threads[0], NULL, churn, NULL);
    pthread_create(&threads[1], NULL, flusher, sink);
    pthread_create(&threads[2], NULL, reader, lines);
    for (size_t i = 0; i < forks; i++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork: %s", strerror(errno));
        if (pid == 0) {
            child_allocates();
            fprintf(sink, "child %zu\n", i);
            fflush(NULL);
            _exit(0);
        }
        reap(pid, "a child forked beside stdio");
    }
    stopping = 1;
    for (int t = 0; t < 3; t++)
        pthread_join(threads[t], NULL);
    fclose(lines);
    fclose(sink);
}

static volatile sig_atomic_t handler_forks, handler_failures;

/* Both signals: fork from the handler; the child exits at once. */
static void fork_in_handler(int signal_number)
{
    (void)signal_number;
    int saved = errno;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    if (pid < 0) {
        handler_failures++;
    } else {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        handler_forks++;
    }
    errno = saved;
}

/* The round the main thread is in, shared with the signaller: one signal per round keeps
 * the signals from outrunning the handlers (a flood would starve the main thread and look
 * like a hang). */
static volatile unsigned *round_counter;

/* A process that signals `target` once per round, at a random moment of it, alternating
 * SIGUSR1 and SIGUSR2, until it is killed or the target is gone. */
static pid_t start_signaller(pid_t target)
{
    round_counter = mmap(NULL, sizeof *round_counter, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (round_counter == MAP_FAILED)
        die("mmap of the round counter: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid != 0)
        return pid;
    uint64_t rng = 17;
    unsigned seen = 0;
    for (unsigned long n = 0;; n++) {
        for (unsigned wait = 0; __atomic_load_n(round_counter, __ATOMIC_ACQUIRE) == seen; wait++) {
            if (getppid() != target)
                _exit(0);
            /* Yield at first (a round is short), then sleep: never hog a core. */
            if (wait < 100)
                sched_yield();
            else
                usleep(100);
        }
        seen = __atomic_load_n(round_counter, __ATOMIC_ACQUIRE);
        for (size_t spin = below(&rng, 20000); spin > 0; spin--)
            __asm__ volatile("" ::: "memory");
        if (kill(target, n % 2 ? SIGUSR2 : SIGUSR1) != 0)
            _exit(0);
    }
}

static void signal_scenario(size_t forks)
{
    struct sigaction action = {.sa_handler = fork_in_handler, .sa_flags = SA_RESTART};
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, NULL);
    sigaction(SIGUSR2, &action, NULL);
    pid_t signaller = start_signaller(getpid());
    uint64_t rng = 11;
    char *held[32] = {0};
    size_t forked = 0;
    for (unsigned round = 1; forked < forks; round++) {
        __atomic_store_n(round_counter, round, __ATOMIC_RELEASE);
        for (int op = 0; op < 20; op++) {
            size_t slot = below(&rng, 32);
            free(held[slot]);
            size_t size = below(&rng, 10) ? below(&rng, 1000) + 1 : below(&rng, 200000) + 1;
            held[slot] = malloc(size);
            if (!held[slot])
                die("malloc(%zu) returned NULL", size);
            held[slot][0] = 1;
        }
        if (round % 4 != 0)
            continue;
        pid_t pid = fork();
        if (pid < 0)
            die("fork: %s", strerror(errno));
        if (pid == 0)
            _exit(0);
        reap(pid, "a child forked while signals arrive");
        forked++;
    }
    /* Stop the signals before the signaller is reaped: no handler may fork after this. */
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    kill(signaller, SIGKILL);
    int status;
    while (waitpid(signaller, &status, 0) < 0 && errno == EINTR)
        ;
    for (size_t i = 0; i < 32; i++)
        free(held[i]);
    CHECK(handler_failures == 0, "%d forks in a signal handler failed", (int)handler_failures);
    CHECK(handler_forks > 0, "no signal arrived: the scenario tested nothing");
}

static void single_scenario(size_t forks)
{
    uint64_t rng = 13;
    for (size_t i = 0; i < forks; i++) {
        char *blocks[16];
        size_t sizes[16];
        for (int b = 0; b < 16; b++) {
            sizes[b] = below(&rng, 4) ? below(&rng, 3000) + 1 : below(&rng, 2 << 20) + 1;
            blocks[b] = malloc(sizes[b]);
            if (!blocks[b])
                die("malloc(%zu) returned NULL", sizes[b]);
            fill(blocks[b], sizes[b], (uint64_t)b + i * 16);
        }
        pid_t pid = fork();
        if (pid < 0)
            die("fork: %s", strerror(errno));
        if (pid == 0) {
            for (int b = 0; b < 16; b++) {
                if (!intact(blocks[b], sizes[b], (uint64_t)b + i * 16))
                    _exit(4);
                free(blocks[b]);
            }
            child_allocates();
            _exit(0);
        }
        reap(pid, "a child of a single-threaded process");
        for (int b = 0; b < 16; b++) {
            CHECK(intact(blocks[b], sizes[b], (uint64_t)b + i * 16), "a block changed over fork");
            free(blocks[b]);
        }
    }
}

static void spawn_scenario(size_t forks, const char *self)
{
    pthread_t thread;
    pthread_create(&thread, NULL, churn, NULL);
    char *arguments[] = {(char *)self, "exec-child", NULL};
    for (size_t i = 0; i < forks; i++) {
        pid_t pid;
        int code = posix_spawn(&pid, self, NULL, NULL, arguments, environ);
        if (code != 0)
            die("posix_spawn: %s", strerror(code));
        reap(pid, "a posix_spawned child");
        pid = vfork();
        if (pid < 0)
            die("vfork: %s", strerror(errno));
        if (pid == 0) {
            execve(self, arguments, environ);
            _exit(127);
        }
        reap(pid, "a vforked child");
    }
    stopping = 1;
    pthread_join(thread, NULL);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "exec-child")) {
        child_allocates();
        return 0;
    }
    if (argc != 3)
        die("usage: fork stdio|signal|single|spawn FORKS");
    size_t forks = number_argument(argv[2], "forks");
    const char *scenario = argv[1];
    if (!strcmp(scenario, "stdio"))
        stdio_scenario(forks);
    else if (!strcmp(scenario, "signal"))
        signal_scenario(forks);
    else if (!strcmp(scenario, "single"))
        single_scenario(forks);
    else if (!strcmp(scenario, "spawn"))
        spawn_scenario(forks, "/proc/self/exe");
    else
        die("unknown scenario `%s`", scenario);
    return finish();
}
