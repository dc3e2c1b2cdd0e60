/* The test programs' one assertion: on failure, name the file, line and condition on stderr and
 * exit 1 (the Rust test reads the exit status and the message). */
#ifndef HEAPWORKS_TEST_CHECK_H
#define HEAPWORKS_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#endif
