/*
 * platform.c — OpenBLAS and OpenMP introspection and thread control (see platform.h).
 */
#include "tensor/platform.h"

#include <cblas.h>
#include <omp.h>
#include <time.h>

PlatformInfo platform_info(void)
{
    PlatformInfo info;
    info.blas_config = openblas_get_config();
    info.blas_core = openblas_get_corename();
    switch (openblas_get_parallel()) {
    case 0: info.blas_threading = "sequential"; break;
    case 1: info.blas_threading = "pthreads"; break;
    case 2: info.blas_threading = "openmp"; break;
    default: info.blas_threading = "unknown"; break;
    }
    info.threads = omp_get_max_threads();
    info.cores = omp_get_num_procs();
    return info;
}

RematStatus platform_check(void)
{
    int parallel = openblas_get_parallel();
    if (parallel == 2) return REMAT_OK;
    return remat_fail(REMAT_ESTATE,
                      "the loaded OpenBLAS is the %s build; remat needs the OpenMP build "
                      "(install libopenblas-openmp-dev, or select it with "
                      "update-alternatives --config libopenblas.so.0-x86_64-linux-gnu)",
                      parallel == 1 ? "pthreads" : "sequential");
}

int platform_max_threads(void)
{
    return 4 * omp_get_num_procs();
}

RematStatus platform_set_threads(int threads)
{
    const int limit = platform_max_threads();
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
