/* Allocates 8001 bytes and never frees them, then execs itself; the new image allocates
 * 8002 bytes. Nothing flushes between the two. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "again") == 0) {
        free(malloc(8002));
        return 0;
    }
    void *kept = malloc(8001);
    (void)kept;
    char *args[] = {argv[0], "again", NULL};
    execv("/proc/self/exe", args);
    return 1;
}
