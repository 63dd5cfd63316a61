/*
 * bench_step.c — how fast one training step runs, against the machine's sgemm peak.
 *
 * For the char-level GPT (L=4, D=256, H=4, T=128, B=8) and the MLP chain (N=16, W=1024,
 * B=256), each with AdamW, it times whole training steps (forward, backward, optimizer)
 * on 1 and 2 threads and prints the median step time and the achieved GFLOP/s, counting
 * the FLOPs the ledger recorded for the step (model FLOPs: the matmuls plus every
 * elementwise op). It also times a square sgemm on the same thread count, so each figure
 * comes with its ceiling measured in the same run.
 *
 * It is a benchmark, not a test: it asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flops.h"
#include "gpt.h"
#include "kernels.h"
#include "mlp.h"
#include "optim.h"
#include "platform.h"

typedef struct Options {
    int steps;  /* timed steps per configuration */
    int warmup; /* untimed steps first */
    bool quick;
} Options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench_step [--quick] [--steps N]\n"
            "  Times whole training steps of the GPT (L=4, D=256, H=4, T=128, B=8) and the MLP chain\n"
            "  (N=16, W=1024, B=256) with AdamW on 1 and 2 threads, and prints the median step time\n"
            "  and achieved GFLOP/s next to the sgemm peak measured on the same threads.\n"
            "  --quick    3 timed steps each (a few seconds)\n"
            "  --steps N  timed steps per configuration, 1..1000 (default 15)\n"
            "  --help     this text\n");
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median GFLOP/s of a 2048³ sgemm on the current thread count. */
static double sgemm_peak(void)
{
    enum { N = 2048, REPS = 5 };
    float *A = malloc((size_t)N * N * sizeof *A), *B = malloc((size_t)N * N * sizeof *B),
          *C = malloc((size_t)N * N * sizeof *C);
    double gflops = 0.0;
    if (A && B && C) {
        for (size_t i = 0; i < (size_t)N * N; i++) A[i] = B[i] = (float)(i % 7) * 0.1f;
        double t[REPS];
        k_matmul(C, A, B, N, N, N, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
        for (int r = 0; r < REPS; r++) {
            double t0 = platform_seconds();
            k_matmul(C, A, B, N, N, N, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
            t[r] = platform_seconds() - t0;
        }
        qsort(t, REPS, sizeof t[0], compare_doubles);
        gflops = 2.0 * N * N * (double)N / t[REPS / 2] * 1e-9;
    }
    free(A), free(B), free(C);
    flops_reset();
    return gflops;
}

/* Times `steps` training steps of `model` on a fixed batch. */
static RematStatus time_steps(Model *model, Var *x, Var *y, const Options *o, double *median_s, double *flops_per_step)
{
    OptimConfig adamw = optim_adamw_defaults(1e-4f);
    Optimizer *opt = optim_create(&adamw, model->params, model->n_params);
    if (!opt) return remat_last_status();
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 1, 2);
    double *t = calloc((size_t)o->steps, sizeof *t);
    RematStatus status = t ? REMAT_OK : remat_fail(REMAT_ENOMEM, "bench_step: no memory");
    for (int s = 0; s < o->warmup + o->steps && status == REMAT_OK; s++) {
        if (s == o->warmup) flops_reset();
        double t0 = platform_seconds();
        optim_zero_grad(opt);
        flops_set_phase(PHASE_FORWARD);
        Var *loss = model_loss(model, x, y, &ctx);
        status = loss ? backward(loss) : remat_last_status();
        if (status == REMAT_OK) status = optim_step(opt);
        var_free(loss);
        tape_reset(tape_current());
        if (s >= o->warmup) t[s - o->warmup] = platform_seconds() - t0;
    }
    if (status == REMAT_OK) {
        *flops_per_step = (double)flops_total() / o->steps;
        qsort(t, (size_t)o->steps, sizeof *t, compare_doubles);
        *median_s = t[o->steps / 2];
    }
    free(t);
    optim_free(opt);
    return status;
}

static Var *random_tokens(int B, int T, Pcg32 *rng)
{
    Tensor *t = tensor_create_typed(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    if (!t) return NULL;
    for (size_t i = 0; i < t->numel; i++) t->i32[i] = (int32_t)pcg32_bounded(rng, 256);
    return var_create(t, false, "tokens");
}

static RematStatus bench_gpt(const Options *o, double *median_s, double *flops)
{
    enum { L = 4, D = 256, H = 4, T = 128, B = 8 };
    Model *m = gpt_create(&(GptConfig){.n_layers = L, .d_model = D, .n_heads = H, .seq_len = T,
                                       .vocab = 256, .dropout = 0.1f, .seed = 1});
    Pcg32 rng;
    pcg32_seed(&rng, 3, 4);
    Var *x = random_tokens(B, T, &rng), *y = random_tokens(B, T, &rng);
    RematStatus status = m && x && y ? time_steps(m, x, y, o, median_s, flops) : remat_last_status();
    var_free(x), var_free(y);
    model_free(m);
    return status;
}

static RematStatus bench_mlp(const Options *o, double *median_s, double *flops)
{
    enum { N = 16, W = 1024, B = 256 };
    Model *m = mlp_create(&(MlpConfig){.n_layers = N, .width = W, .seed = 1});
    MlpTask *task = mlp_task_create(W, 2);
    Pcg32 rng;
    pcg32_seed(&rng, 5, 6);
    Var *x = NULL, *y = NULL;
    RematStatus status = m && task ? mlp_task_batch(task, &rng, B, &x, &y) : remat_last_status();
    if (status == REMAT_OK) status = time_steps(m, x, y, o, median_s, flops);
    var_free(x), var_free(y);
    mlp_task_free(task);
    model_free(m);
    return status;
}

int main(int argc, char **argv)
{
    Options o = {.steps = 15, .warmup = 2};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quick")) {
            o.quick = true;
            o.steps = 3;
            o.warmup = 1;
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1000) {
                fprintf(stderr, "bench_step: bad value for --steps: %s\n", argv[i]);
                usage(stderr);
                return 2;
            }
            o.steps = (int)v;
        } else {
            fprintf(stderr, "bench_step: unknown option or missing value: %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    PlatformInfo info = platform_info();
    printf("remat bench_step: whole training steps (forward, backward, AdamW) against the sgemm peak\n");
    printf("  OpenBLAS %s build, core %s; %d timed steps after %d warm-up, median\n\n", info.blas_threading,
           info.blas_core, o.steps, o.warmup);
    printf("  %-34s %7s %10s %9s %12s %8s\n", "model", "threads", "step ms", "GFLOP/s", "sgemm GFLOP/s", "of peak");
    const int max_threads = info.cores < 2 ? info.cores : 2;
    for (int model = 0; model < 2; model++) {
        for (int threads = 1; threads <= max_threads; threads++) {
            if (platform_set_threads(threads) != REMAT_OK) break;
            double peak = sgemm_peak(), median = 0, flops = 0;
            RematStatus status = model == 0 ? bench_gpt(&o, &median, &flops) : bench_mlp(&o, &median, &flops);
            if (status != REMAT_OK) {
                fprintf(stderr, "bench_step: %s\n", remat_last_error());
                return 1;
            }
            double gflops = flops / median * 1e-9;
            printf("  %-34s %7d %10.2f %9.1f %12.1f %7.0f%%\n",
                   model == 0 ? "gpt L=4 D=256 H=4 T=128 B=8" : "mlp N=16 W=1024 B=256", threads,
                   1e3 * median, gflops, peak, 100.0 * gflops / peak);
        }
    }
    return 0;
}
