/*
 * bench_step.c — how fast one training step runs, against the machine's sgemm peak.
 *
 * For the char-level GPT (L=4, D=256, H=4, T=128, B=8, dropout 0.1) and the MLP chain
 * (N=16, W=1024, B=256), each with AdamW, it times whole training steps (forward,
 * backward, optimizer) under each checkpoint strategy, on 1 and 2 threads, and prints the
 * median step time and the achieved GFLOP/s. The FLOPs are those the ledger recorded for
 * the step — the matmuls plus every elementwise op, recomputation included, so the rate
 * says how busy the machine was, and the recompute column says how much of that work was
 * done twice. Each thread count also times a square sgemm, so every figure comes with its
 * ceiling measured in the same run.
 *
 * It is a benchmark, not a test: it asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench/cli.h"
#include "tensor/kernels.h"
#include "bench/measure.h"
#include "tensor/platform.h"
#include "bench/results.h"

enum { N_KINDS = 4, N_MODELS = 2, MAX_THREADS = 2 };
static const StrategyKind KINDS[N_KINDS] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SQRT, STRATEGY_SELECTIVE};

static const BenchInfo INFO = {
    .name = "bench_step",
    .question = "how fast a training step runs, against the machine's sgemm peak",
    .about = "  Whole AdamW training steps of the GPT (L=4, D=256, H=4, T=128, B=8) and the MLP chain\n"
             "  (N=16, W=1024, B=256) under each strategy on 1 and 2 threads: median step time and\n"
             "  GFLOP/s (the ledger's FLOPs, recomputation included) next to the sgemm peak measured\n"
             "  on the same threads.",
    .quick = "6 or more rounds per model and thread count until every step time of a strategy\n"
             "                      against none is within +-5 points, at most 2 s each (about 20 seconds)",
    .full = "15 timed rounds after 2 warm-up rounds",
    .timed = true,
    .strategies = KINDS,
    .n_strategies = N_KINDS,
    .step_flags = STEP_FLAG_POLICY | STEP_FLAG_NO_RNG_REPLAY,
    .model_flags = true,
};

/* GFLOP/s of a 2048³ sgemm on the current thread count: the median of REPS runs, with its
 * interval. */
static RematStatus sgemm_peak(Estimate *gflops)
{
    enum { N = 2048, REPS = 6 }; /* the fewest with a 95% interval */
    const size_t n = (size_t)N * N;
    float *A = malloc(n * sizeof *A), *B = malloc(n * sizeof *B), *C = malloc(n * sizeof *C);
    RematStatus status = A && B && C ? REMAT_OK : remat_fail(REMAT_ENOMEM, "no memory for the sgemm operands");
    if (status == REMAT_OK) {
        for (size_t i = 0; i < n; i++) A[i] = B[i] = (float)(i % 7) * 0.1f;
        double rate[REPS];
        k_matmul(C, A, B, N, N, N, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
        for (int r = 0; r < REPS; r++) {
            const double t0 = platform_seconds();
            k_matmul(C, A, B, N, N, N, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
            rate[r] = 2.0 * N * N * (double)N / (platform_seconds() - t0) * 1e-9;
        }
        *gflops = estimate_median(rate, REPS);
    }
    free(A), free(B), free(C);
    flops_reset();
    return status;
}

static const char *const MODEL_NAMES[N_MODELS] = {"gpt L=4 D=256 H=4 T=128 B=8", "mlp N=16 W=1024 B=256"};

/* One model with its batch and optimizer, and a schedule per strategy measured. */
typedef struct Subject {
    ModelBench bench;
    Schedule *schedules[N_KINDS];
    Variant variants[N_KINDS];
} Subject;

static void subject_free(Subject *s)
{
    for (int k = 0; k < N_KINDS; k++) schedule_free(s->schedules[k]);
    model_bench_free(&s->bench);
    *s = (Subject){0};
}

/* Makes model `which` (0 the GPT, 1 the MLP chain of the header) and a schedule for each
 * strategy in `sweep`. */
static RematStatus subject_create(Subject *s, int which, const Strategy *sweep, int n, const BenchOptions *o)
{
    *s = (Subject){0};
    const OptimConfig adamw = optim_adamw_defaults(1e-4f);
    RematStatus status =
        which == 0
            ? gpt_bench_create(&s->bench, &(GptShape){.L = 4, .C = 256, .H = 4, .T = 128, .B = 8, .dropout = 0.1f},
                               &adamw)
            : mlp_bench_create(&s->bench, &(MlpShape){.N = 16, .W = 1024, .B = 256}, &adamw);
    for (int k = 0; k < n && status == REMAT_OK; k++) {
        s->schedules[k] = schedule_for_strategy(&sweep[k], s->bench.model->n_layers);
        if (!s->schedules[k]) status = remat_last_status();
        s->variants[k] = bench_variant(o, (Variant){.name = strategy_name(sweep[k].kind), .schedule = s->schedules[k]},
                                       which == 0);
    }
    return status;
}

static const ResultsField FIELDS[] = {
    {"model", ""},
    {"strategy", ""},
    {"threads", "threads"},
    RESULTS_TIMED("step_seconds", "seconds"),
    RESULTS_TIMED("time_overhead", "ratio"),
    {"flops", "FLOPs per step, recomputation included"},
    {"recompute_flops", "FLOPs per step"},
    RESULTS_TIMED("gflops_per_second", "GFLOP/s"),
    RESULTS_TIMED("sgemm_gflops_per_second", "GFLOP/s"),
    {"sgemm_samples", "sgemm runs sgemm_gflops_per_second comes from"},
    RESULTS_TIMED("fraction_of_peak", "ratio"),
    {"peak_act", "bytes"},
    RESULTS_SAMPLES,
};

/* flops / seconds: the interval's ends swap, as the rate falls when the time grows. */
static Estimate rate_of(double flops, const Estimate *seconds)
{
    return (Estimate){flops / seconds->value * 1e-9, flops / seconds->hi * 1e-9, flops / seconds->lo * 1e-9,
                      seconds->samples};
}

/* The step's rate over the sgemm's: the interval from the two intervals' far ends, so it
 * holds both (they come from different runs). */
static Estimate fraction_of(const Estimate *rate, const Estimate *peak)
{
    return (Estimate){rate->value / peak->value, rate->lo / peak->hi, rate->hi / peak->lo, rate->samples};
}

static void print_and_record(const char *model, const Strategy *sweep, const StepStats *st, const Timing *timing,
                             int n, int threads, const Estimate *peak, ResultsTable *table)
{
    for (int k = 0; k < n; k++) {
        uint64_t flops = 0;
        for (int p = 0; p < PHASE_COUNT; p++) flops += st[k].flops[p];
        const Estimate seconds = timing_median(timing, k, STEP_SECONDS);
        const Estimate overhead = timing_ratio(timing, k, 0, STEP_SECONDS); /* against none, paired by round */
        const Estimate rate = rate_of((double)flops, &seconds), fraction = fraction_of(&rate, peak);
        const char *strategy = strategy_name(sweep[k].kind);
        char step[64], spread[48];
        printf("  %-28s %-9s %7d %-28s %-26s %9.3f %9.3f %8.1f %8.1f %6.0f%% %9.2f\n", model, strategy, threads,
               estimate_ms_str(step, sizeof step, &seconds), estimate_ratio_str(spread, sizeof spread, &overhead),
               1e-9 * (double)flops,
               1e-9 * (double)st[k].flops[PHASE_RECOMPUTE], rate.value, peak->value, 100.0 * fraction.value,
               mib(st[k].peak[MEM_ACT]));
        ResultsRecord *rec = results_record(table);
        record_str(rec, "model", model);
        record_str(rec, "strategy", strategy);
        record_num(rec, "threads", threads);
        record_estimate(rec, "step_seconds", &seconds);
        record_estimate(rec, "time_overhead", &overhead);
        record_num(rec, "flops", (double)flops);
        record_num(rec, "recompute_flops", (double)st[k].flops[PHASE_RECOMPUTE]);
        record_estimate(rec, "gflops_per_second", &rate);
        const Estimate sgemm = {peak->value, peak->lo, peak->hi, seconds.samples}; /* its own count: sgemm_samples */
        record_estimate(rec, "sgemm_gflops_per_second", &sgemm);
        record_num(rec, "sgemm_samples", peak->samples);
        record_estimate(rec, "fraction_of_peak", &fraction);
        record_num(rec, "peak_act", (double)st[k].peak[MEM_ACT]);
    }
}

int main(int argc, char **argv)
{
    BenchOptions o;
    Results *results;
    const int start = bench_start(&INFO, argc, argv, &o, &results);
    if (start != BENCH_RUN) return start;
    Strategy sweep[N_KINDS];
    const int n = bench_sweep(&INFO, &o, NULL, sweep);
    const TimingPlan plan = bench_timing_plan(&o, o.quick ? 1 : 2, 15, 2.0);
    const int cores = platform_info().cores, max_threads = cores < MAX_THREADS ? cores : MAX_THREADS;
    results_config_str(results, "optimizer", "adamw");
    results_config_plan(results, &plan);
    ResultsTable *table = results_table(results, "steps", "one AdamW step per model, strategy and thread count",
                                        FIELDS, (int)(sizeof FIELDS / sizeof FIELDS[0]), true);
    RematStatus status = REMAT_OK;
    Estimate peaks[MAX_THREADS] = {{0}};
    StepStats stats[N_MODELS][MAX_THREADS][N_KINDS];
    Timing timing[N_MODELS][MAX_THREADS] = {{{0}}};
    Progress progress;
    progress_begin(&progress, N_MODELS * max_threads * timing_max_runs(&plan, n));
    for (int t = 0; t < max_threads && status == REMAT_OK; t++) {
        status = platform_set_threads(t + 1);
        if (status == REMAT_OK) status = sgemm_peak(&peaks[t]);
        for (int m = 0; m < N_MODELS && status == REMAT_OK; m++) {
            Subject s;
            status = subject_create(&s, m, sweep, n, &o);
            char label[48];
            snprintf(label, sizeof label, "%.3s, %d thread%s", MODEL_NAMES[m], t + 1, t ? "s" : "");
            TrainCtx ctx = {.training = true, .seed = 1};
            pcg32_seed(&ctx.rng, 1, 2);
            if (status == REMAT_OK)
                status = steps_alternate(s.bench.model, s.variants, n, s.bench.opt, &s.bench.batch, &ctx, &plan,
                                         &progress, label, stats[m][t], &timing[m][t]);
            subject_free(&s);
        }
    }
    progress_end(&progress);
    if (status == REMAT_OK) {
        printf("\n  median step and its 95%% interval, after %d warm-up rounds; strategies interleaved step\n"
               "  by step (rounds per model and thread count: %d", plan.warmup, timing[0][0].rounds);
        for (int m = 0; m < N_MODELS; m++)
            for (int t = 0; t < max_threads; t++)
                if (m || t) printf(", %d", timing[m][t].rounds);
        printf(")\n");
        printf("  %-28s %-9s %7s %-28s %-26s %9s %9s %8s %8s %7s %9s\n", "model", "strategy", "threads", "step",
               "vs none (interval, rounds)", "GFLOP", "recompute", "GFLOP/s", "sgemm", "of peak", "peak ACT");
        printf("  %-28s %-9s %7s %-28s %-26s %9s %9s %8s %8s %7s %9s\n", "", "", "", "", "", "per step", "GFLOP", "",
               "GFLOP/s", "", "MiB");
        for (int m = 0; m < N_MODELS; m++)
            for (int t = 0; t < max_threads; t++)
                print_and_record(MODEL_NAMES[m], sweep, stats[m][t], &timing[m][t], n, t + 1, &peaks[t], table);
    }
    for (int m = 0; m < N_MODELS; m++)
        for (int t = 0; t < max_threads; t++) timing_free(&timing[m][t]);
    return bench_finish(&INFO, &o, results, status);
}
