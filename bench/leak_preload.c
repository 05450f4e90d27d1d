/* A deliberate memory leak for bench/memory_growth.py: an LD_PRELOAD shim
 * that wraps malloc and, every GPUFLOW_LEAK_EVERY-th call, allocates
 * GPUFLOW_LEAK_BYTES more (default 4096), writes to every byte of it (so it
 * is resident, not just reserved) and never frees it. With neither variable
 * set it only forwards to glibc. It proves the soak can fail: a healthy
 * gpuflowd passes, the same gpuflowd with this preloaded must not.
 *
 *   gcc -shared -fPIC -O2 -o build/leak_preload.so bench/leak_preload.c -ldl
 *   GPUFLOW_LEAK_EVERY=200 LD_PRELOAD=$PWD/build/leak_preload.so build/bin/gpuflowd ...
 *
 * It forwards to glibc's __libc_malloc rather than dlsym(RTLD_NEXT, "malloc"):
 * dlsym may itself allocate, which would recurse into this malloc before the
 * pointer is known. calloc, realloc and free are not wrapped; what malloc
 * returns is an ordinary glibc block that they handle as usual. The count is
 * of malloc calls (operator new, gRPC's and protobuf's allocations), shared
 * by all threads. The number of blocks leaked is readable at exit with
 * GPUFLOW_LEAK_REPORT=1 (one line on stderr).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);

static unsigned long leak_every;  /* 0: no leak */
static size_t leak_bytes = 4096;
static atomic_ulong calls;
static atomic_ulong leaked_blocks;
static volatile void *last_leak;  /* keeps the leak reachable to nobody but us */

static unsigned long parse_ulong(const char *s) {
    unsigned long v = 0;
    if (s == NULL) return 0;
    for (; *s >= '0' && *s <= '9'; ++s) v = v * 10 + (unsigned long)(*s - '0');
    return v;
}

__attribute__((constructor)) static void leak_init(void) {
    /* getenv does not allocate, so it is safe this early. */
    leak_every = parse_ulong(getenv("GPUFLOW_LEAK_EVERY"));
    unsigned long bytes = parse_ulong(getenv("GPUFLOW_LEAK_BYTES"));
    if (bytes > 0) leak_bytes = bytes;
}

static void write_ulong(int fd, unsigned long v) {
    char buf[24];
    int i = sizeof buf;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v && i > 0);
    (void)!write(fd, buf + i, sizeof buf - (size_t)i);
}

__attribute__((destructor)) static void leak_report(void) {
    const char *r = getenv("GPUFLOW_LEAK_REPORT");
    if (r == NULL || *r != '1') return;
    static const char a[] = "leak_preload: malloc calls ";
    static const char b[] = ", blocks leaked ";
    static const char c[] = "\n";
    (void)!write(2, a, sizeof a - 1);
    write_ulong(2, atomic_load(&calls));
    (void)!write(2, b, sizeof b - 1);
    write_ulong(2, atomic_load(&leaked_blocks));
    (void)!write(2, c, sizeof c - 1);
}

void *malloc(size_t size) {
    void *p = __libc_malloc(size);
    if (leak_every) {
        unsigned long n = atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed) + 1;
        if (n % leak_every == 0) {
            void *leak = __libc_malloc(leak_bytes);
            if (leak != NULL) {
                memset(leak, 0xA5, leak_bytes);
                last_leak = leak;
                atomic_fetch_add_explicit(&leaked_blocks, 1, memory_order_relaxed);
            }
        }
    }
    return p;
}
