/*
 * Per-thread state of the heapworks capture shim.
 *
 * The storage lives in initial-exec TLS: reaching it is one load from the thread pointer, it
 * never calls __tls_get_addr and so never allocates, which a malloc hook needs. The Rust side
 * (src/thread.rs) owns the layout; it checks at start-up that its state fits in these bytes.
 * All-zero bytes are the state of a thread that has not been seen yet.
 */
#include <stddef.h>

#define HEAPWORKS_THREAD_STATE_BYTES 64

static __thread unsigned char heapworks_thread_state[HEAPWORKS_THREAD_STATE_BYTES]
    __attribute__((tls_model("initial-exec"), aligned(16)));

void *heapworks_capture_thread_state(void) { return heapworks_thread_state; }

size_t heapworks_capture_thread_state_bytes(void) { return sizeof heapworks_thread_state; }
