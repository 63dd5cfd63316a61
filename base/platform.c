/*
 * platform.c — OpenBLAS and OpenMP introspection, thread control, and the process's
 * resident memory (see platform.h).
 */
#include "base/platform.h"

#include <cblas.h>
#include <malloc.h>
#include <stdbool.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/parse.h"

/* The names of openblas_get_parallel()'s answers: how the loaded OpenBLAS runs threads. */
static const char *const BLAS_THREADING[] = {"sequential", "pthreads", "openmp"};
static const NameTable BLAS_THREADING_NAMES = {BLAS_THREADING, 3};

/* The most threads platform_set_threads takes: 4 per core. */
static int max_threads(void)
{
    return 4 * omp_get_num_procs();
}

PlatformInfo platform_info(void)
{
    const int parallel = openblas_get_parallel();
    PlatformInfo info = {.blas_config = openblas_get_config(), .blas_core = openblas_get_corename(),
                         .blas_threading = name_of(&BLAS_THREADING_NAMES, parallel),
                         .threads = omp_get_max_threads(), .max_threads = max_threads(),
                         .cores = omp_get_num_procs(), .omp_wait = "default"};
    static char warning[256];
    if (parallel != 2) { /* 2: the OpenMP build, BLAS_THREADING's third name */
        snprintf(warning, sizeof warning, "the loaded OpenBLAS is the %s build; remat needs the OpenMP build (install "
                 "libopenblas-openmp-dev, or select it with update-alternatives --config "
                 "libopenblas.so.0-x86_64-linux-gnu)", info.blas_threading);
        info.blas_warning = warning;
    }
    /* The variables libgomp reads, at start-up, for how its idle threads wait: "NAME=value"
     * of the first one set (OMP_WAIT_POLICY wins, as in libgomp). */
    static char setting[64];
    static const char *const NAMES[] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"};
    for (int i = 0; i < 2; i++) {
        const char *value = getenv(NAMES[i]);
        if (value && *value) {
            snprintf(setting, sizeof setting, "%s=%s", NAMES[i], value);
            info.omp_wait = setting;
            break;
        }
    }
    return info;
}

RematStatus platform_set_threads(int threads)
{
    const int limit = max_threads();
    if (threads < 1 || threads > limit)
        return remat_fail(REMAT_EINVAL, "thread count %d is outside 1..%d", threads, limit);
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    return REMAT_OK;
}

double platform_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* The number after `key` on a line of the text file at `path` ("MemAvailable:  24114396
 * kB"), times `unit`; 0 if the file or the key cannot be read. */
static size_t read_number(const char *path, const char *key, size_t unit)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    size_t value = 0;
    const size_t key_len = strlen(key);
    while (!value && fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (!strncmp(line, key, key_len) && sscanf(line + key_len, "%llu", &v) == 1) value = (size_t)v * unit;
    }
    fclose(f);
    return value;
}

size_t platform_available_memory(void)
{
    size_t available = read_number("/proc/meminfo", "MemAvailable:", 1024);
    if (!available) {
        const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) available = (size_t)pages * (size_t)page;
    }
    /* Or less: the room left under this process's memory cgroup, if it has a limit: v2's
     * memory.max at the mount's root (a container's namespace), or v1's limit of the group
     * /proc/self/cgroup names under the memory controller ("no limit" reads as about 2^63). */
    char line[512], dir[600] = "/sys/fs/cgroup", limit[700], used[700];
    const char *v1 = NULL;
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && !v1 && fgets(line, sizeof line, f)) v1 = strstr(line, ":memory:/");
    if (f) fclose(f);
    const char *path = v1 ? strchr(v1, '/') : NULL; /* the group, ":memory:" behind it */
    if (path) snprintf(dir, sizeof dir, "/sys/fs/cgroup/memory%.*s", (int)strcspn(path, "\n"), path);
    snprintf(limit, sizeof limit, "%s/%s", dir, v1 ? "memory.limit_in_bytes" : "memory.max");
    snprintf(used, sizeof used, "%s/%s", dir, v1 ? "memory.usage_in_bytes" : "memory.current");
    const size_t cap = read_number(limit, "", 1), in_use = read_number(used, "", 1);
    const size_t room = cap > in_use ? cap - in_use : 0;
    if (room && (!available || room < available)) available = room;
    return available;
}

RematStatus platform_check_address_space(void)
{
    const int threads = omp_get_max_threads();
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return REMAT_OK;
    const double mib = 1024.0 * 1024.0;
    const size_t used = read_number("/proc/self/status", "VmSize:", 1024);
    /* OpenBLAS mapped the first thread's buffer as it loaded: it is in `used`. */
    const size_t need = used + (size_t)(threads - 1) * PLATFORM_BLAS_BYTES_PER_THREAD + PLATFORM_ADDRESS_MARGIN;
    if (need <= limit.rlim_cur) return REMAT_OK;
    return remat_fail(REMAT_EOOM,
                      "the address-space limit (ulimit -v) is %.0f MiB and %.0f MiB of it is in use; OpenBLAS "
                      "maps about %.0f MiB for each thread after the first (%d thread%s), and short of it retries "
                      "forever: raise the limit to at least %.0f MiB, or run fewer threads",
                      (double)limit.rlim_cur / mib, (double)used / mib, PLATFORM_BLAS_BYTES_PER_THREAD / mib, threads,
                      threads == 1 ? "" : "s", (double)need / mib);
}

/* The resident bytes (VmRSS) and their peak (VmHWM: since the process began, or since a
 * watch's start restarted it), 0 where the kernel does not give them: the watch is then not
 * `known`. */
ResidentWatch platform_resident_watch_start(void)
{
    malloc_trim(0); /* the freed blocks' pages back to the kernel: a baseline with none kept */
    ResidentWatch w = {.baseline = read_number("/proc/self/status", "VmRSS:", 1024)};
    w.known = w.baseline && read_number("/proc/self/status", "VmHWM:", 1024);
    if (!w.known) return (ResidentWatch){0};
    FILE *f = fopen("/proc/self/clear_refs", "w"); /* "5" restarts the peak at the current size */
    const bool written = f && fputs("5", f) >= 0;
    w.peak_of_work = f && fclose(f) == 0 && written; /* if not, the whole process's peak will do */
    return w;
}

void platform_resident_watch_stop(ResidentWatch *w)
{
    w->peak = w->known ? read_number("/proc/self/status", "VmHWM:", 1024) : 0;
    w->known = w->peak > 0;
    w->heap_kept = mallinfo2().fordblks; /* free bytes in glibc's heap */
}
