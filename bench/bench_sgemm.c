/*
 * bench_sgemm.c — what this machine's float32 matmul and memory can do: the two ceilings
 * for every training step remat runs here.
 *
 * It prints which OpenBLAS build and core are loaded, checks k_matmul against the naive
 * reference on small matrices (all four transpose combinations), then times square
 * sgemm on each thread count and prints the median GFLOP/s with its 95% interval. Then it
 * measures the memory bandwidth the same way, STREAM-like (McCalpin's copy and triad, on
 * arrays far larger than the caches, OpenMP static loops): the ceiling of a pass that
 * does a few FLOPs per element it reads, as an optimizer or an elementwise op does. It
 * writes both as DIR/bench_sgemm.json (--results DIR, as every bench; docs/RESULTS.md).
 * It is not a BLAS benchmark suite nor STREAM itself: one shape family and two loops,
 * enough to know the ceilings that later benches compare against.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>

#include "bench/cli.h"
#include "tensor/kernels.h"
#include "base/platform.h"

#define MAX_THREAD_COUNTS 8

/* bench_sgemm's own flags (the common ones are bench/cli.h's). */
typedef struct Options {
    int size;     /* M = N = K */
    int reps;     /* timed repetitions per thread count */
    int stream_mib; /* each of the bandwidth loops' three arrays, MiB */
    int threads[MAX_THREAD_COUNTS];
    size_t n_threads;
} Options;

static Options own = {.size = 2048, .reps = 9, .stream_mib = 256};
static unsigned own_given;

/* --threads: a comma-separated list of thread counts. */
static RematStatus set_threads(void *opts, const char *v)
{
    Options *o = opts;
    const int most = platform_info().max_threads;
    if (parse_int_list(v, 1, most, o->threads, MAX_THREAD_COUNTS, &o->n_threads)) return REMAT_OK;
    return remat_fail(REMAT_EINVAL, "'%s' is not a list of at most %d thread counts, each 1..%d", v,
                      MAX_THREAD_COUNTS, most);
}

static const Flag FLAGS[] = {
    {.name = "--size", .type = FLAG_INT, .offset = offsetof(Options, size), .value = "N", .lo = 64, .hi = 8192,
     .help = "matrix size, 64..8192 (default 2048)"},
    {.name = "--reps", .type = FLAG_INT, .offset = offsetof(Options, reps), .value = "R", .lo = 1, .hi = 100,
     .help = "timed repetitions per thread count, 1..100 (default 9)"},
    {.name = "--stream-mib", .type = FLAG_INT, .offset = offsetof(Options, stream_mib), .value = "M", .lo = 1,
     .hi = 4096, .help = "each bandwidth array's size in MiB, 1..4096 (default 256: far\n"
                         "larger than the caches, which a smaller M may not be)"},
    {.name = "--threads", .type = FLAG_CUSTOM, .set = set_threads, .value = "LIST",
     .help = "comma-separated thread counts, at most 8 of them, each 1..4 per\n"
             "core (default 1,2,... up to the cores)"},
};
enum { SIZE = 1u << 0, REPS = 1u << 1, STREAM_MIB = 1u << 2 }; /* their rows */

static const BenchInfo INFO = {
    .name = "bench_sgemm",
    .question = "the machine's float32 matmul peak and memory bandwidth",
    .about = "  Times cblas_sgemm on N x N x N float32 matrices and prints the median GFLOP/s, then\n"
             "  the memory bandwidth of a copy and a triad over three arrays of M MiB (GB/s).",
    .quick = "N = 1024, 6 repetitions, M = 64 (a few seconds)",
    .full = "N = 2048, 9 repetitions, M = 256",
    .own = {.flags = FLAGS, .n = sizeof FLAGS / sizeof FLAGS[0], .opts = &own, .accepted = ~0u,
            .given = &own_given},
};

static void fill_uniform(float *x, size_t n, Pcg32 *rng)
{
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * pcg32_float(rng) - 1.0f;
}

/* C = op(A)·op(B) (M,N), the textbook triple loop summed in double: the reference that
 * k_matmul must agree with before anything is timed. */
static void naive_matmul(double *C, const float *A, const float *B, int M, int N, int K,
                         CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB)
{
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double dot = 0.0;
            for (int k = 0; k < K; k++) {
                /* op(A)[i,k] and op(B)[k,j], read from their stored layouts */
                double a = transA == CblasNoTrans ? A[(size_t)i * K + k] : A[(size_t)k * M + i];
                double b = transB == CblasNoTrans ? B[(size_t)k * N + j] : B[(size_t)j * K + k];
                dot += a * b;
            }
            C[(size_t)i * N + j] = dot;
        }
    }
}

/* Worst relative error of k_matmul against naive_matmul over the four transpose cases. */
static double check_matmul(Pcg32 *rng)
{
    enum { M = 67, N = 45, K = 81 };
    static float A[M * K], B[K * N], C[M * N];
    static double Cref[M * N];
    fill_uniform(A, M * K, rng);
    fill_uniform(B, K * N, rng);
    double worst = 0.0;
    const CBLAS_TRANSPOSE ops[2] = {CblasNoTrans, CblasTrans};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            k_matmul(C, A, B, 1, M, N, K, ops[a], ops[b], 1.0f, 0.0f);
            naive_matmul(Cref, A, B, M, N, K, ops[a], ops[b]);
            for (int i = 0; i < M * N; i++) worst = fmax(worst, fabs(C[i] - Cref[i]) / (1.0 + fabs(Cref[i])));
        }
    return worst;
}

/* Seconds of `reps` timed k_matmul calls of size n, after one warm-up: their median and
 * its 95% interval (bench/timing.h). */
static Estimate time_sgemm(float *C, const float *A, const float *B, int n, int reps)
{
    double times[100];
    for (int r = -1; r < reps; r++) { /* r = -1: the warm-up, not kept */
        const double t0 = platform_seconds();
        k_matmul(C, A, B, 1, n, n, n, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
        if (r >= 0) times[r] = platform_seconds() - t0;
    }
    return estimate_median(times, reps);
}

/* ---- memory bandwidth ---------------------------------------------------------------------- */

/* McCalpin's STREAM loops, two of them: copy (a = b) and triad (a = b + s·c). */
typedef enum StreamKernel { STREAM_COPY, STREAM_TRIAD, STREAM_KERNELS } StreamKernel;
static const char *const STREAM_NAMES[STREAM_KERNELS] = {"copy", "triad"};
/* Arrays each pass moves, by STREAM's count: read and written ones, not the cache's extra
 * read of a line before it is written (write-allocate), so a rate is STREAM's. */
static const int STREAM_ARRAYS[STREAM_KERNELS] = {2, 3};

/* Seconds of one pass of kernel k over n elements, on the current threads (static
 * schedule: each thread streams its own contiguous part). */
static double stream_pass(StreamKernel k, float *a, const float *b, const float *c, size_t n)
{
    const double t0 = platform_seconds();
    if (k == STREAM_COPY) {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i];
    } else {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0f * c[i];
    }
    return platform_seconds() - t0;
}

/* GB/s of `reps` passes of each kernel, interleaved (copy, triad, copy, ...) after one
 * warm-up pass each: the median and its interval, per kernel. */
static void time_stream(float *a, float *b, float *c, size_t n, int reps, Estimate rate[STREAM_KERNELS])
{
    double seconds[STREAM_KERNELS][100];
    for (int k = 0; k < STREAM_KERNELS; k++) stream_pass((StreamKernel)k, a, b, c, n);
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < STREAM_KERNELS; k++) seconds[k][r] = stream_pass((StreamKernel)k, a, b, c, n);
    for (int k = 0; k < STREAM_KERNELS; k++) {
        const Estimate t = estimate_median(seconds[k], reps);
        rate[k] = estimate_rate((double)STREAM_ARRAYS[k] * (double)n * sizeof(float) * 1e-9, &t);
    }
}

/* ---- the run ----------------------------------------------------------------------------- */

typedef struct SgemmRow {
    int size, threads;
    Estimate gflops_per_second;
    double seconds; /* printed only: the median call */
} SgemmRow;

static const ResultsColumn SGEMM_COLUMNS[] = {
    COLUMN(SgemmRow, size, INT, "M = N = K", SHOW("size", "", 6, 0)),
    COLUMN(SgemmRow, threads, INT, "threads", SHOW("threads", "", 7, 0)),
    COLUMN_PRINTED(SgemmRow, seconds, DOUBLE, SHOW("median", "ms", 10, 2)),
    COLUMN_TIMED(SgemmRow, gflops_per_second, "GFLOP/s", SHOW("rate (95% interval)", "GFLOP/s", 0, 1)), COLUMN_SAMPLES,
};

typedef struct StreamRow {
    const char *kernel;
    int threads;
    size_t array_bytes, bytes_per_pass;
    Estimate gb_per_second;
} StreamRow;

static const ResultsColumn STREAM_COLUMNS[] = {
    COLUMN(StreamRow, kernel, STR, "", SHOW("kernel", "", 6, 0)),
    COLUMN(StreamRow, threads, INT, "threads", SHOW("threads", "", 7, 0)),
    COLUMN(StreamRow, array_bytes, SIZE, "bytes"), COLUMN(StreamRow, bytes_per_pass, SIZE, "bytes"),
    COLUMN_TIMED(StreamRow, gb_per_second, "GB/s", SHOW("bandwidth (95% interval)", "GB/s", 0, 1)), COLUMN_SAMPLES,
};

/* Times sgemm on every thread count of `opt`, on matrices filled from `rng`, prints it and
 * records it in `table`. REMAT_OK, or the error of no memory or of a bad thread count. */
static RematStatus run_sgemm(const Options *opt, Pcg32 *rng, ResultsTable *table)
{
    const size_t nn = (size_t)opt->size * (size_t)opt->size;
    float *A = malloc(3 * nn * sizeof *A);
    if (!A) return remat_fail(REMAT_ENOMEM, "cannot allocate three %dx%d matrices", opt->size, opt->size);
    float *B = A + nn, *C = B + nn;
    fill_uniform(A, 2 * nn, rng); /* A, then B */
    printf("\n");
    results_print_head(table, 0);
    const double flops = 2.0 * (double)opt->size * (double)opt->size * (double)opt->size * 1e-9;
    double gflops[MAX_THREAD_COUNTS];
    RematStatus status = REMAT_OK;
    for (size_t t = 0; t < opt->n_threads && status == REMAT_OK; t++) {
        if ((status = platform_set_threads(opt->threads[t])) != REMAT_OK) break;
        const Estimate seconds = time_sgemm(C, A, B, opt->size, opt->reps);
        const Estimate rate = estimate_rate(flops, &seconds);
        gflops[t] = rate.value;
        results_add_row(table, &(SgemmRow){opt->size, opt->threads[t], rate, seconds.value});
    }
    free(A);
    if (status == REMAT_OK && opt->n_threads > 1 && opt->threads[0] == 1)
        printf("\n  %d threads reach %.2fx the 1-thread rate.\n", opt->threads[opt->n_threads - 1],
               gflops[opt->n_threads - 1] / gflops[0]);
    return status;
}

/* Times the bandwidth loops on every thread count of `opt`, prints and records them. */
static RematStatus run_stream(const Options *opt, ResultsTable *table)
{
    const size_t n = (size_t)opt->stream_mib * (1u << 20) / sizeof(float), count = 3 * n;
    float *all = malloc(count * sizeof *all);
    if (!all) return remat_fail(REMAT_ENOMEM, "no memory for three arrays of %d MiB", opt->stream_mib);
    /* first touched by the threads that stream them: a parallel loop of the passes' schedule */
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < count; i++) all[i] = 1.0f;
    printf("\n  memory bandwidth: three arrays of %d MiB, STREAM's byte count (no write-allocate)\n",
           opt->stream_mib);
    results_print_head(table, 0);
    RematStatus status = REMAT_OK;
    for (size_t t = 0; t < opt->n_threads && status == REMAT_OK; t++) {
        if ((status = platform_set_threads(opt->threads[t])) != REMAT_OK) break;
        Estimate rate[STREAM_KERNELS];
        time_stream(all, all + n, all + 2 * n, n, opt->reps, rate);
        for (int k = 0; k < STREAM_KERNELS; k++)
            results_add_row(table, &(StreamRow){STREAM_NAMES[k], opt->threads[t], n * sizeof(float),
                                                (size_t)STREAM_ARRAYS[k] * n * sizeof(float), rate[k]});
    }
    free(all);
    return status;
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    /* What --quick and the cores decide, unless the flags said otherwise. */
    if (o->quick && !(own_given & SIZE)) own.size = 1024;
    if (o->quick && !(own_given & REPS)) own.reps = 6; /* the fewest with a 95% interval */
    if (o->quick && !(own_given & STREAM_MIB)) own.stream_mib = 64;
    const int cores = platform_info().cores;
    if (own.n_threads == 0)
        for (int t = 1; t <= cores && t <= MAX_THREAD_COUNTS; t++) own.threads[own.n_threads++] = t;
    const char *forced = getenv("OPENBLAS_CORETYPE");
    printf("  OpenBLAS   %s; its core chosen by %s%s\n", platform_info().blas_config,
           forced ? "OPENBLAS_CORETYPE=" : "OpenBLAS", forced ? forced : "");

    Pcg32 rng;
    pcg32_seed(&rng, 42, 54);
    double worst = check_matmul(&rng);
    /* float32 dot products of length 81 with inputs in [-1,1]: errors near 1e-6 are
     * rounding; anything near 1e-3 would be a wrong kernel. */
    printf("  check      k_matmul vs naive double reference, 4 transpose cases: worst rel. error %.1e %s\n",
           worst, worst < 1e-4 ? "(ok)" : "(FAILED)");
    RematStatus status = worst < 1e-4 ? REMAT_OK : remat_fail(REMAT_ESTATE, "k_matmul disagrees with the reference");

    results_config_num(results, "size", own.size);
    results_config_num(results, "reps", own.reps);
    results_config_num(results, "stream_mib", own.stream_mib);
    ResultsTable *sgemm = RESULTS_TABLE(results, "sgemm", "square sgemm per thread count", SGEMM_COLUMNS);
    ResultsTable *stream = RESULTS_TABLE(results, "bandwidth", "STREAM-like copy and triad per thread count",
                                         STREAM_COLUMNS);
    if (status == REMAT_OK) status = run_sgemm(&own, &rng, sgemm);
    if (status == REMAT_OK) status = run_stream(&own, stream);
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
