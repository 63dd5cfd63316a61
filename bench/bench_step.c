/*
 * bench_step.c — how fast one training step runs, against the machine's sgemm peak, and
 * where its time goes.
 *
 * Whole AdamW steps of the GPT and the MLP chain under each strategy on 1 and 2 threads,
 * interleaved round by round with a square sgemm on each thread count, so that every rate
 * comes with its ceiling measured in the same rounds: a step's share of the peak, and its
 * speed-up on 2 threads, are medians of paired ratios like any overhead. The FLOPs are the
 * ledger's, recomputation included; the ledger's clocks say how much of the step the
 * matmuls took and each phase's share (tensor/flops.h). Last, AdamW's pass alone, one call
 * per parameter against one pass over all of them.
 *
 * It is a benchmark, not a test: it asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tensor/kernels.h"
#include "bench/measure.h"
#include "base/platform.h"

enum { N_KINDS = 4, N_MODELS = 2, MAX_THREADS = 2 };
static const StrategyKind KINDS[N_KINDS] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SQRT, STRATEGY_SELECTIVE};

static const BenchInfo INFO = {
    .name = "bench_step",
    .question = "how fast a training step runs, against the machine's sgemm peak, and where its time goes",
    .about = "  AdamW steps of the GPT (L=4 D=256 H=4 T=128 B=8) and the MLP (N=16 W=1024 B=256) per\n"
             "  strategy on 1 and 2 threads against the sgemm peak of the same rounds: GFLOP/s, the time\n"
             "  inside and outside the matmuls, each phase's share; AdamW's pass alone.",
    .quick = "rounds until +-5 points or 4 s per model (the optimizer's pass: 2 s)",
    .full = "15 timed rounds after 2 warm-up rounds; the optimizer's pass 31 rounds",
    .timed = true,
    .strategies = KINDS,
    .n_strategies = N_KINDS,
    .step_flags = STEP_FLAG_POLICY | STEP_FLAG_NO_RNG_REPLAY,
    .model_flags = true,
};

/* The peak: a square sgemm of SGEMM_N on each thread count, run in every round of the
 * steps (an ExtraRuns of steps_alternate), on operands made once. */
enum { SGEMM_N = 2048 };
static const double SGEMM_FLOPS = 2.0 * SGEMM_N * SGEMM_N * (double)SGEMM_N;

/* The sgemm's A, B and C, one after the other in one allocation (NULL: no memory, said). */
static float *sgemm_create(void)
{
    const size_t n = (size_t)SGEMM_N * SGEMM_N;
    float *A = malloc(3 * n * sizeof *A);
    if (!A) return remat_fail_null(REMAT_ENOMEM, "no memory for the sgemm operands");
    for (size_t i = 0; i < n; i++) A[i] = A[n + i] = (float)(i % 7) * 0.1f; /* A and B */
    return A;
}

/* ExtraRuns' run: one sgemm on `t` + 1 threads, its seconds in values[STEP_SECONDS] and,
 * as all of it is a matmul, in values[STEP_MATMUL_SECONDS] (so that a step's matmuls can be
 * paired with it too). The FLOP ledger is reset after it, so that it counts in no step. */
static RematStatus sgemm_run(void *ctx, int t, double *values)
{
    float *A = ctx, *B = A + (size_t)SGEMM_N * SGEMM_N, *C = B + (size_t)SGEMM_N * SGEMM_N;
    if (platform_set_threads(t + 1) != REMAT_OK) return remat_last_status();
    const double t0 = platform_seconds();
    k_matmul(C, A, B, 1, SGEMM_N, SGEMM_N, SGEMM_N, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
    values[STEP_SECONDS] = values[STEP_MATMUL_SECONDS] = platform_seconds() - t0;
    flops_reset();
    return REMAT_OK;
}

static const char *const MODEL_NAMES[N_MODELS] = {"gpt L=4 D=256 H=4 T=128 B=8", "mlp N=16 W=1024 B=256"};

/* One model with its batch and optimizer, a schedule per strategy measured, and a
 * variant per thread count and strategy: variant t·n + k runs strategy k on t+1 threads. */
typedef struct Subject {
    ModelBench bench;
    Schedule *schedules[N_KINDS];
    Variant variants[MAX_THREADS * N_KINDS];
} Subject;

static void subject_free(Subject *s)
{
    for (int k = 0; k < N_KINDS; k++) schedule_free(s->schedules[k]);
    model_bench_free(&s->bench);
    *s = (Subject){0};
}

/* Makes model `which` (0 the GPT, 1 the MLP chain of the header), a schedule for each
 * strategy in `sweep`, and its variants on 1..`threads` threads. */
static RematStatus subject_create(Subject *s, int which, const Strategy *sweep, int n, int threads,
                                  const BenchOptions *o)
{
    *s = (Subject){0};
    const OptimConfig adamw = optim_adamw_defaults(1e-4f);
    RematStatus status =
        which == 0 ? gpt_bench_create(&s->bench, &STEP_GPT, &adamw)
                   : mlp_bench_create(&s->bench, &STEP_MLP, NULL, &adamw);
    for (int k = 0; k < n && status == REMAT_OK; k++) {
        s->schedules[k] = schedule_for_strategy(&sweep[k], s->bench.model->n_layers);
        if (!s->schedules[k]) status = remat_last_status();
        for (int t = 0; t < threads; t++)
            s->variants[t * n + k] = bench_variant(o,
                                                   (Variant){.name = name_of(&STRATEGY_NAMES, sweep[k].kind),
                                                             .schedule = s->schedules[k],
                                                             .threads = t + 1},
                                                   which == 0);
    }
    return status;
}

/* ---- the optimizer's pass, per parameter and in one pass ----------------------------------- */

/* AdamW over a model's parameter shapes (on copies: the model is not touched), two ways:
 * one kernel call per parameter, each threaded only when it is large (how the optimizer
 * ran before it handed every parameter over at once), and one pass over all of them split
 * evenly over the threads (how it runs now). Same arithmetic, same bits. */
enum { WAY_PER_PARAMETER, WAY_ONE_PASS, N_WAYS };
static const char *const WAY_NAMES[N_WAYS] = {"per parameter", "one pass"};

typedef struct OptimPasses {
    OptimSlice slices[256];
    int count;
    float *arrays;      /* param, grad, m, v of every slice, one allocation */
} OptimPasses;

static RematStatus optim_pass(void *ctx, int variant, double *values)
{
    const OptimPasses *o = ctx;
    if (platform_set_threads(variant / N_WAYS + 1) != REMAT_OK) return remat_last_status();
    const OptimUpdate adamw = {.adamw = true, .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .t = 1};
    const double t0 = platform_seconds();
    if (variant % N_WAYS == WAY_PER_PARAMETER)
        for (int s = 0; s < o->count; s++) k_optim_update(&o->slices[s], 1, &adamw);
    else k_optim_update(o->slices, o->count, &adamw);
    values[0] = platform_seconds() - t0;
    return REMAT_OK;
}

/* Slices of the shapes of `model`'s parameters over fresh arrays (gradients 0.001..0.006,
 * parameters 0.1, moments 0). */
static RematStatus optim_passes_create(OptimPasses *o, const Model *model)
{
    *o = (OptimPasses){.count = model->n_params};
    if (o->count > (int)(sizeof o->slices / sizeof o->slices[0]))
        return remat_fail(REMAT_EINVAL, "bench_step: %d parameters, more than the optimizer pass holds", o->count);
    size_t total = 0;
    for (int i = 0; i < o->count; i++) total += model->params[i].var->value->numel;
    o->arrays = calloc(4 * total, sizeof *o->arrays);
    if (!o->arrays) return remat_fail(REMAT_ENOMEM, "bench_step: no memory for the optimizer pass's arrays");
    for (size_t i = 0; i < total; i++) {
        o->arrays[i] = 0.1f;
        o->arrays[total + i] = 0.001f * (float)(1 + i % 6);
    }
    size_t first = 0;
    for (int i = 0; i < o->count; i++) {
        const size_t n = model->params[i].var->value->numel;
        float *p = o->arrays + first;
        o->slices[i] = (OptimSlice){p, p + total, p + 2 * total, p + 3 * total,
                                    model->params[i].decay ? 0.01f : 0.0f, n};
        first += n;
    }
    return REMAT_OK;
}

typedef struct OptimRow {
    const char *model;
    int threads;
    const char *way;
    int parameters;
    Estimate optimizer_seconds, time_vs_per_parameter; /* the latter against per parameter, same threads */
} OptimRow;

static const ResultsColumn OPTIM_COLUMNS[] = {
    COLUMN(OptimRow, model, STR, "", SHOW("model", "", 28, 0)),
    COLUMN(OptimRow, threads, INT, "threads", SHOW("threads", "", 7, 0)),
    COLUMN(OptimRow, way, STR, "", SHOW("way", "", 14, 0)),
    COLUMN(OptimRow, parameters, INT, "tensors", SHOW("tensors", "", 7, 0)),
    COLUMN_TIMED(OptimRow, optimizer_seconds, "seconds", SHOW("time (95% interval)", "ms", 28, 2)),
    COLUMN_TIMED(OptimRow, time_vs_per_parameter, "ratio", SHOW("vs per parameter (interval, rounds)", "+%", 27, 1)),
    COLUMN_SAMPLES,
};

/* Times both ways on every thread count, interleaved, and prints and records them. */
static RematStatus measure_optim_passes(const Model *model, const char *name, int threads, const TimingPlan *plan,
                                        ResultsTable *table)
{
    OptimPasses o;
    RematStatus status = optim_passes_create(&o, model);
    Timing timing = {0};
    if (status == REMAT_OK) status = timing_run(plan, N_WAYS * threads, 1, optim_pass, &o, NULL, NULL, &timing);
    for (int v = 0; v < N_WAYS * threads && status == REMAT_OK; v++)
        results_add_row(table, &(OptimRow){name, v / N_WAYS + 1, WAY_NAMES[v % N_WAYS], o.count,
                                           timing_median(&timing, v, 0), timing_ratio(&timing, v, v - v % N_WAYS, 0)});
    timing_free(&timing);
    free(o.arrays);
    return status;
}

/* e times a constant c > 0. */
static Estimate scaled(const Estimate *e, double c)
{
    return (Estimate){e->value * c, e->lo * c, e->hi * c, e->samples};
}

/* What bench_step reports of one model on `threads` threads under strategy k. */
typedef struct Row {
    const char *model, *strategy;
    int threads;
    uint64_t flops;
    StepStats step; /* its last */
    Estimate seconds, overhead, rate, matmul_seconds, matmul_rate, outside;
    Estimate peak;           /* the sgemm's GFLOP/s on the same threads, in the same rounds */
    Estimate fraction;       /* the step's rate over the sgemm's, paired by round */
    Estimate matmul_fraction; /* the step's matmuls' rate over the sgemm's, paired by round */
    Estimate speedup;        /* 1-thread step over 2-thread step, paired by round (none on 1 thread) */
    Estimate sgemm_speedup;  /* the same for the sgemm */
    Estimate phase[PHASE_COUNT]; /* each phase's share of the step */
    double minor_faults;
} Row;

/* Row of variant t·n + k of `timing`: the step against none on the same threads, against
 * the same strategy on 1 thread, and against the sgemm on the same threads, each paired by
 * round (the sgemm on t + 1 threads is variant n·threads + t). */
static Row row_of(const char *model, const Strategy *sweep, const StepStats *st, const Timing *timing, int n,
                  int threads, int t, int k)
{
    const int v = t * n + k, sv = n * threads + t;
    Row r = {.model = model, .strategy = name_of(&STRATEGY_NAMES, sweep[k].kind), .threads = t + 1, .step = st[v]};
    for (int p = 0; p < PHASE_COUNT; p++) r.flops += st[v].flops[p];
    r.seconds = timing_median(timing, v, STEP_SECONDS);
    r.overhead = timing_ratio(timing, v, t * n, STEP_SECONDS);
    r.rate = estimate_rate(1e-9 * (double)r.flops, &r.seconds);
    const Estimate sgemm_seconds = timing_median(timing, sv, STEP_SECONDS);
    r.peak = estimate_rate(1e-9 * SGEMM_FLOPS, &sgemm_seconds);
    const Estimate time_ratio = timing_ratio(timing, sv, v, STEP_SECONDS); /* sgemm time / step time */
    r.fraction = scaled(&time_ratio, (double)r.flops / SGEMM_FLOPS);
    const Estimate slower = timing_ratio(timing, v, k, STEP_SECONDS);
    const Estimate sgemm_slower = timing_ratio(timing, sv, n * threads, STEP_SECONDS);
    if (t > 0) { /* a time ratio turned into a speed-up */
        r.speedup = estimate_rate(1.0, &slower);
        r.sgemm_speedup = estimate_rate(1.0, &sgemm_slower);
    }
    r.matmul_seconds = timing_median(timing, v, STEP_MATMUL_SECONDS);
    r.matmul_rate = estimate_rate(1e-9 * (double)st[v].matmul_flops, &r.matmul_seconds);
    const Estimate matmul_ratio = timing_ratio(timing, sv, v, STEP_MATMUL_SECONDS); /* sgemm / the matmuls' */
    r.matmul_fraction = scaled(&matmul_ratio, (double)st[v].matmul_flops / SGEMM_FLOPS);
    r.outside = timing_median(timing, v, STEP_OUTSIDE_MATMUL_SHARE);
    for (int p = 0; p < PHASE_COUNT; p++) r.phase[p] = timing_median(timing, v, STEP_PHASE_SHARE + p);
    r.minor_faults = timing_median(timing, v, STEP_MINOR_FAULTS).value;
    return r;
}

/* The steps table, printed in two: what a step costs (panel 0), and where its time goes
 * (panel 1). */
static const ResultsColumn COLUMNS[] = {
    COLUMN(Row, model, STR, "", SHOW_IN(3u, "model", "", 28, 0)),
    COLUMN(Row, strategy, STR, "", SHOW_IN(3u, "strategy", "", 9, 0)),
    COLUMN(Row, threads, INT, "threads", SHOW_IN(3u, "threads", "", 7, 0)),
    COLUMN_TIMED_AS("step_seconds", Row, seconds, "seconds", SHOW("step (95% interval)", "ms", 26, 2)),
    COLUMN_TIMED_AS("time_overhead", Row, overhead, "ratio", SHOW("vs none (interval, rounds)", "+%", 26, 1)),
    COLUMN(Row, flops, U64, "FLOPs per step, recomputation included", SHOW("per step", "GFLOP", 9, 3)),
    COLUMN_AS("recompute_flops", Row, step.flops[PHASE_RECOMPUTE], U64, "FLOPs per step",
              SHOW("recompute", "GFLOP", 9, 3)),
    COLUMN_TIMED_AS("gflops_per_second", Row, rate, "GFLOP/s", SHOW("rate", "GFLOP/s", 24, 1)),
    COLUMN_TIMED_AS("sgemm_gflops_per_second", Row, peak, "GFLOP/s", SHOW("sgemm", "GFLOP/s", 24, 1)),
    COLUMN_TIMED_AS("fraction_of_peak", Row, fraction, "ratio", SHOW("of peak", "%", 14, 0)),
    COLUMN_AS("peak_act", Row, step.peak[MEM_ACT], SIZE, "bytes", SHOW("peak ACT", "MiB", 9, 2)),
    COLUMN_TIMED_AS("speedup_vs_1_thread", Row, speedup, "ratio", SHOW_IN(2u, "vs 1 thread", "x", 20, 2)),
    COLUMN_TIMED_AS("sgemm_speedup_vs_1_thread", Row, sgemm_speedup, "ratio",
                    SHOW_IN(2u, "sgemm vs 1 thread", "x", 20, 2)),
    COLUMN_AS("matmul_flops", Row, step.matmul_flops, U64, "FLOPs per step"),
    COLUMN_TIMED(Row, matmul_seconds, "seconds", SHOW_IN(2u, "inside matmuls", "ms", 26, 2)),
    COLUMN_TIMED_AS("matmul_gflops_per_second", Row, matmul_rate, "GFLOP/s", SHOW_IN(2u, "matmul", "GFLOP/s", 24, 1)),
    COLUMN_TIMED_AS("matmul_fraction_of_peak", Row, matmul_fraction, "ratio", SHOW_IN(2u, "of peak", "%", 14, 0)),
    COLUMN_TIMED_AS("outside_matmul_share", Row, outside, "ratio", SHOW_IN(2u, "outside matmuls", "%", 18, 1)),
    COLUMN_TIMED_AS("forward_share", Row, phase[PHASE_FORWARD], "ratio"),
    COLUMN_TIMED_AS("backward_share", Row, phase[PHASE_BACKWARD], "ratio"),
    COLUMN_TIMED_AS("recompute_share", Row, phase[PHASE_RECOMPUTE], "ratio",
                    SHOW_IN(2u, "recompute phase", "%", 18, 1)),
    COLUMN_TIMED_AS("optimizer_share", Row, phase[PHASE_OPTIMIZER], "ratio",
                    SHOW_IN(2u, "optimizer phase", "%", 18, 1)),
    COLUMN(Row, minor_faults, DOUBLE, "page faults per step (getrusage ru_minflt; the median over the steps)",
           SHOW_IN(2u, "page", "faults", 7, 0)),
    COLUMN_SAMPLES,
};

/* Prints both tables of the run and records a row per model, thread count and strategy. */
static void report(const Strategy *sweep, StepStats stats[N_MODELS][MAX_THREADS * N_KINDS],
                   const Timing timing[N_MODELS], int n, int threads, ResultsTable *table)
{
    printf("\n  median step and its 95%% interval, after the warm-up rounds; thread counts, strategies and\n"
           "  a %d³ sgemm on each thread count interleaved run by run (rounds per model: %d, %d); of peak:\n"
           "  the median of the paired ratios, step rate over sgemm rate of the same round\n",
           SGEMM_N, timing[0].rounds, timing[1].rounds);
    for (int panel = 0; panel < 2; panel++) {
        if (panel)
            printf("\n  where the step's time goes (medians and 95%% intervals; speed-up: median of paired ratios\n"
                   "  to the same strategy on 1 thread in the same round, and the sgemm's own, its ceiling)\n");
        results_print_head(table, panel);
        for (int m = 0; m < N_MODELS; m++)
            for (int t = 0; t < threads; t++)
                for (int k = 0; k < n; k++) {
                    const Row r = row_of(MODEL_NAMES[m], sweep, stats[m], &timing[m], n, threads, t, k);
                    if (panel) results_print_row(table, &r, panel);
                    else results_add_row(table, &r);
                }
    }
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    Strategy sweep[N_KINDS];
    const int n = bench_sweep(&INFO, o, NULL, sweep);
    const int cores = platform_info().cores, max_threads = cores < MAX_THREADS ? cores : MAX_THREADS;
    results_config_str(results, "optimizer", "adamw");
    const TimingPlan plan = bench_timing_plan(o, results, o->quick ? 1 : 2, 15, 4.0);
    ResultsTable *table = RESULTS_TABLE(results, "steps", "one AdamW step per model, strategy and thread count",
                                        COLUMNS);
    ResultsTable *optim_table = RESULTS_TABLE(results, "optimizer", "AdamW over each model's parameters, one "
                                              "call per parameter against one pass, per thread count", OPTIM_COLUMNS);
    float *sgemm = sgemm_create();
    RematStatus status = sgemm ? REMAT_OK : remat_last_status();
    const ExtraRuns peak_runs = {.count = max_threads, .run = sgemm_run, .ctx = sgemm};
    static StepStats stats[N_MODELS][MAX_THREADS * N_KINDS];
    Timing timing[N_MODELS] = {{0}};
    static Subject models[N_MODELS];
    Progress progress;
    progress_begin(&progress, stdout, N_MODELS * timing_max_runs(&plan, n * max_threads + peak_runs.count));
    for (int m = 0; m < N_MODELS && status == REMAT_OK; m++) {
        Subject *s = &models[m];
        status = subject_create(s, m, sweep, n, max_threads, o);
        char label[48];
        snprintf(label, sizeof label, "%.3s", MODEL_NAMES[m]);
        TrainCtx ctx = bench_ctx(1, 2);
        if (status == REMAT_OK)
            status = steps_alternate(&s->bench, s->variants, n * max_threads, &peak_runs, &ctx, &plan, &progress, label,
                                     stats[m], &timing[m]);
    }
    progress_end(&progress);
    free(sgemm);
    if (status == REMAT_OK) report(sweep, stats, timing, n, max_threads, table);
    if (status == REMAT_OK)
        printf("\n  the optimizer's pass alone: AdamW over each model's parameter shapes, one call per parameter\n"
               "  (threaded when it has 32768 elements or more) against one pass split evenly over the threads;\n"
               "  ways and thread counts interleaved, medians with 95%% intervals\n");
    if (status == REMAT_OK) results_print_head(optim_table, 0);
    const TimingPlan optim_plan = bench_timing_plan(o, NULL, 2, 31, 2.0);
    for (int m = 0; m < N_MODELS; m++) {
        if (status == REMAT_OK)
            status = measure_optim_passes(models[m].bench.model, MODEL_NAMES[m], max_threads, &optim_plan, optim_table);
        subject_free(&models[m]);
        timing_free(&timing[m]);
    }
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
