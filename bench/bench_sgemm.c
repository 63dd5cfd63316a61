/*
 * bench_sgemm.c — what this machine's float32 matmul can do: the ceiling for every
 * training step remat runs here.
 *
 * It prints which OpenBLAS build and core are loaded, checks k_matmul against the naive
 * reference on small matrices (all four transpose combinations), then times square
 * sgemm on each thread count and prints the median GFLOP/s with its 95% interval. It is not a BLAS benchmark
 * suite: one shape family, enough to know the peak that later benches compare against.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/file.h"
#include "bench/timing.h"
#include "tensor/kernels.h"
#include "tensor/kernels_ref.h"
#include "tensor/parse.h"
#include "tensor/platform.h"
#include "tensor/rng.h"

#define MAX_THREAD_COUNTS 8

typedef struct Options {
    int size;     /* M = N = K */
    int reps;     /* timed repetitions per thread count */
    int threads[MAX_THREAD_COUNTS];
    size_t n_threads;
} Options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench_sgemm [--quick] [--size N] [--reps R] [--threads LIST]\n"
            "  Times cblas_sgemm on N x N x N float32 matrices and prints the median GFLOP/s.\n"
            "  --quick        N = 1024 and 6 repetitions (a few seconds)\n"
            "  --size N       matrix size, 64..8192 (default 2048)\n"
            "  --reps R       timed repetitions per thread count, 1..100 (default 9)\n"
            "  --threads LIST comma-separated thread counts, at most 8 of them, each 1..4 per core\n"
            "                 (default 1,2,... up to the cores)\n"
            "  --help         this text\n");
}

static int parse_options(int argc, char **argv, Options *opt)
{
    opt->size = 2048;
    opt->reps = 9;
    opt->n_threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(arg, "--quick")) {
            opt->size = 1024;
            opt->reps = 6; /* the fewest with a 95% interval */
        } else if (!strcmp(arg, "--size") && value) {
            if (!parse_int(value, 64, 8192, &opt->size)) goto bad_value;
            i++;
        } else if (!strcmp(arg, "--reps") && value) {
            if (!parse_int(value, 1, 100, &opt->reps)) goto bad_value;
            i++;
        } else if (!strcmp(arg, "--threads") && value) {
            if (!parse_int_list(value, 1, platform_max_threads(), opt->threads, MAX_THREAD_COUNTS, &opt->n_threads))
                goto bad_value;
            i++;
        } else {
            fprintf(stderr, "bench_sgemm: unknown option or missing value: %s\n", arg);
            usage(stderr);
            return -1;
        }
        continue;
    bad_value:
        fprintf(stderr, "bench_sgemm: bad value for %s: %s\n", arg, value);
        usage(stderr);
        return -1;
    }
    if (opt->n_threads == 0) {
        int cores = platform_info().cores;
        for (int t = 1; t <= cores && t <= MAX_THREAD_COUNTS; t++) opt->threads[opt->n_threads++] = t;
    }
    return 0;
}

static void fill_uniform(float *x, size_t n, Pcg32 *rng)
{
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * pcg32_float(rng) - 1.0f;
}

/* Worst relative error of k_matmul against ref_matmul over the four transpose cases. */
static double check_matmul(Pcg32 *rng)
{
    enum { M = 67, N = 45, K = 81 };
    static float A[M * K], B[K * N], C[M * N];
    static double Cref[M * N];
    fill_uniform(A, M * K, rng);
    fill_uniform(B, K * N, rng);
    double worst = 0.0;
    const CBLAS_TRANSPOSE ops[2] = {CblasNoTrans, CblasTrans};
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < 2; b++) {
            k_matmul(C, A, B, M, N, K, ops[a], ops[b], 1.0f, 0.0f);
            ref_matmul(Cref, A, B, M, N, K, ops[a], ops[b], 1.0, 0.0);
            for (int i = 0; i < M * N; i++) {
                double err = fabs(C[i] - Cref[i]) / (1.0 + fabs(Cref[i]));
                if (err > worst) worst = err;
            }
        }
    }
    return worst;
}

/* Seconds of `reps` timed k_matmul calls of size n, after one warm-up: their median and
 * its 95% interval (bench/timing.h). */
static Estimate time_sgemm(float *C, const float *A, const float *B, int n, int reps)
{
    double times[100];
    k_matmul(C, A, B, n, n, n, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
    for (int r = 0; r < reps; r++) {
        double t0 = platform_seconds();
        k_matmul(C, A, B, n, n, n, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
        times[r] = platform_seconds() - t0;
    }
    return estimate_median(times, reps);
}

int main(int argc, char **argv)
{
    Options opt;
    if (parse_options(argc, argv, &opt)) return 2;

    PlatformInfo info = platform_info();
    printf("remat bench_sgemm: float32 matmul throughput, the ceiling for a training step\n");
    printf("  OpenBLAS   %s\n", info.blas_config);
    const char *forced = getenv("OPENBLAS_CORETYPE");
    printf("  threading  %s build, core %s%s%s%s, %d processors\n", info.blas_threading, info.blas_core,
           forced ? " (chosen by OPENBLAS_CORETYPE=" : "", forced ? forced : "", forced ? ")" : "",
           info.cores);
    if (platform_check() != REMAT_OK) printf("  warning    %s\n", remat_last_error());

    Pcg32 rng;
    pcg32_seed(&rng, 42, 54);
    double worst = check_matmul(&rng);
    /* float32 dot products of length 81 with inputs in [-1,1]: errors near 1e-6 are
     * rounding; anything near 1e-3 would be a wrong kernel. */
    printf("  check      k_matmul vs naive double reference, 4 transpose cases: worst rel. error %.1e %s\n",
           worst, worst < 1e-4 ? "(ok)" : "(FAILED)");
    if (worst >= 1e-4) return 1;

    size_t n = (size_t)opt.size;
    float *A = malloc(n * n * sizeof *A), *B = malloc(n * n * sizeof *B), *C = malloc(n * n * sizeof *C);
    if (!A || !B || !C) {
        fprintf(stderr, "bench_sgemm: cannot allocate three %dx%d matrices\n", opt.size, opt.size);
        free(A), free(B), free(C);
        return 1;
    }
    fill_uniform(A, n * n, &rng);
    fill_uniform(B, n * n, &rng);

    printf("\n  %6s  %7s  %10s  %8s  %s\n", "size", "threads", "median ms", "GFLOP/s",
           "GFLOP/s 95% interval (runs)");
    double gflops[MAX_THREAD_COUNTS];
    for (size_t t = 0; t < opt.n_threads; t++) {
        if (platform_set_threads(opt.threads[t]) != REMAT_OK) {
            fprintf(stderr, "bench_sgemm: %s\n", remat_last_error());
            free(A), free(B), free(C);
            return 2;
        }
        const Estimate seconds = time_sgemm(C, A, B, opt.size, opt.reps);
        const double flops = 2.0 * (double)n * (double)n * (double)n * 1e-9;
        gflops[t] = flops / seconds.value;
        printf("  %6d  %7d  %10.2f  %8.1f  %.1f..%.1f (%d)\n", opt.size, opt.threads[t], seconds.value * 1e3, gflops[t],
               flops / seconds.hi, flops / seconds.lo, seconds.samples);
    }
    if (opt.n_threads > 1 && opt.threads[0] == 1)
        printf("\n  %d threads reach %.2fx the 1-thread rate.\n", opt.threads[opt.n_threads - 1],
               gflops[opt.n_threads - 1] / gflops[0]);
    free(A);
    free(B);
    free(C);
    if (file_flush_stdout() != REMAT_OK) { /* the figures were measured for someone to read */
        fprintf(stderr, "bench_sgemm: %s\n", remat_last_error());
        return 1;
    }
    return 0;
}
