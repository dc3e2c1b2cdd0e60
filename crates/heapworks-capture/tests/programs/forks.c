/* The parent allocates 7001 and 7004 bytes; its forked child 7002 and 7003, and frees the
 * inherited 7001-byte block. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    void *inherited = malloc(7001);
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        void *a = malloc(7002);
        void *b = malloc(7003);
        free(a);
        free(inherited);
        free(b);
        exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || status != 0) return 2;
    void *later = malloc(7004);
    free(inherited);
    free(later);
    return 0;
}
