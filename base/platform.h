/*
 * platform.h — the machine remat runs on: which OpenBLAS, which core, how many threads,
 * and how much of its memory the operating system counts as this process's.
 *
 * remat wants the OpenMP build of OpenBLAS, so that BLAS and remat's own OpenMP loops
 * share one thread pool. A pthread build beside OpenMP loops leaves two pools of spinning
 * threads fighting for the same cores (on a 2-core machine, 2 threads then run about 2x
 * slower than 1). platform_info says which build is loaded, with a warning when it is not
 * the OpenMP one.
 */
#ifndef REMAT_PLATFORM_H
#define REMAT_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

typedef struct PlatformInfo {
    const char *blas_config;   /* openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." */
    const char *blas_core;     /* openblas_get_corename(), e.g. "Cooperlake" */
    const char *blas_threading;/* "openmp", "pthreads" or "sequential" */
    const char *blas_warning;  /* NULL for the OpenMP build; otherwise which build was found
                                  and how to install the right one */
    int threads;               /* threads remat's loops and BLAS will use */
    int max_threads;           /* the most platform_set_threads takes: 4 per core */
    int cores;                 /* processors available to this process */
    const char *omp_wait;      /* how a waiting OpenMP thread waits, as the environment says
                                  (libgomp read it at start-up; remat never changes it):
                                  "OMP_WAIT_POLICY=passive" or "GOMP_SPINCOUNT=1000" (the first
                                  set, in libgomp's order), or "default" (spin about 300000
                                  times, then sleep) */
} PlatformInfo;

/* What is loaded and how many threads are in use. The strings are owned by OpenBLAS, or
 * by platform.c (the warning and omp_wait: valid until the next call). */
PlatformInfo platform_info(void);

/* Sets the thread count of both OpenMP loops and OpenBLAS (1..PlatformInfo.max_threads).
 * On error returns REMAT_EINVAL and changes nothing. */
RematStatus platform_set_threads(int threads);

/* What OpenBLAS maps for each thread after the first (it maps the first's as it loads),
 * with that thread's stack and allocator arena, and a margin above it all: measured with
 * `train --threads 2` under `ulimit -v`, which hung at 500 MiB and ran at 700 MiB with
 * 302 MiB mapped when the check ran. Below what OpenBLAS maps as it loads, a process cannot
 * reach main at all. */
#define PLATFORM_BLAS_BYTES_PER_THREAD ((size_t)256 << 20)
#define PLATFORM_ADDRESS_MARGIN ((size_t)64 << 20)

/* REMAT_OK unless an address-space limit (ulimit -v, RLIMIT_AS) leaves less than
 * PLATFORM_BLAS_BYTES_PER_THREAD for each thread in effect after the first, plus the
 * margin, above what the process maps now: there OpenBLAS would spin forever retrying a
 * buffer it cannot map. REMAT_EOOM then, naming the limit, what is in use and the limit
 * to ask for. Call it once the thread count is set, before the first BLAS call. */
RematStatus platform_check_address_space(void);

/* The bytes of memory this process could still get without the machine swapping: Linux's
 * MemAvailable (free memory plus what the page cache can give back), lowered to what a
 * memory cgroup (v2 or v1) leaves when the process runs under a limit; where neither can be read,
 * the free pages (sysconf). 0 if nothing can be read: the caller then has no figure to
 * check against. */
size_t platform_available_memory(void);

/* Seconds on a monotonic clock, for timing. */
double platform_seconds(void);

/* The process's resident memory as the operating system counts it (/proc/self/status:
 * VmRSS, and VmHWM for its peak) over some work: every page of it in RAM — the code and
 * libraries, OpenBLAS's and OpenMP's buffers and thread stacks, the allocator's heap
 * (blocks in use and freed blocks it keeps), and the tensors the memory ledger counts.
 *
 *     ResidentWatch w = platform_resident_watch_start();   // before the model is built
 *     ... build, train ...
 *     platform_resident_watch_stop(&w);   // w.peak against baseline + the ledger's resident peak
 *
 * The baseline is what the process holds before the work with no freed blocks kept
 * (malloc_trim first): code, libraries, OpenMP's and OpenBLAS's buffers as far
 * as earlier work touched them, the allocator's own. The start restarts the kernel's peak
 * at the current size (writes 5 to /proc/self/clear_refs, Linux 4.0 on), so that the peak
 * read at the stop is that of the work. */
typedef struct ResidentWatch {
    bool known;        /* false where the kernel does not say (not Linux): the rest is 0 */
    bool peak_of_work; /* false: the kernel would not restart its peak, and `peak` is the
                          whole process's */
    size_t baseline;   /* resident when the watch started */
    size_t peak;       /* the kernel's peak since then (after platform_resident_watch_stop) */
    size_t heap_kept;  /* freed blocks the allocator kept at the stop: resident, in no tensor */
} ResidentWatch;

ResidentWatch platform_resident_watch_start(void);
void platform_resident_watch_stop(ResidentWatch *w);

#endif /* REMAT_PLATFORM_H */
