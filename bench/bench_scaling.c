/*
 * bench_scaling.c — quiz questions 1 and 4 on the MLP chain: what recomputation trades
 * for memory (extra FLOPs, and the time they take), and how activation memory grows with
 * depth under none, full and sqrt(N) checkpointing.
 *
 * For each depth N (doubling), AdamW steps of the chain under the three strategies,
 * alternating step by step: peak memory, FLOPs by phase, step time and its overhead
 * against none. The peaks are checked against the counts derived by hand in
 * tests/test_checkpoint.c (derived_units), and the least-squares slope of ln(peak ACT)
 * against ln(N) is set beside the theory: 1 for none and full, 0.5 for sqrt. The counts'
 * constant terms are why a fit over small N comes out below it.
 *
 * What it is not: a test. It asserts nothing about time; tests/test_bench.c checks the
 * slopes of a --quick run.
 */
#include <math.h>
#include <stdio.h>

#include "bench/measure.h"

enum { N_KINDS = 3, MAX_DEPTHS = 8 };
static const StrategyKind KINDS[N_KINDS] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SQRT};

static const BenchInfo INFO = {
    .name = "bench_scaling",
    .question = "quiz questions 1 and 4: recomputation trades FLOPs for memory; sqrt(N) checkpoints "
                "give O(sqrt N) activations",
    .about = "  The MLP chain at N = 4 ... 256 under none, full and sqrt: peak memory, FLOPs by phase,\n"
             "  step time and overhead, the log-log slope of peak activations against N.",
    .quick = "W = 64, B = 16, N = 8..256, rounds until +-5 points or 2 s in all",
    .full = "W = 256, B = 32, N = 4..256, 9 timed rounds after 2 warm-up rounds",
    .timed = true,
    .strategies = KINDS,
    .n_strategies = N_KINDS,
};

typedef struct Config {
    Strategy strategies[N_KINDS]; /* what the command line leaves of the sweep, none first */
    int n_strategies;
    int width, batch;
    int depths[MAX_DEPTHS];
    int n_depths;
    TimingPlan plan; /* per depth */
} Config;

/* One record of the steps table: one depth under one strategy, its last step `step`. */
typedef struct StepRow {
    int n_layers;
    const char *strategy;
    int segments;
    double peak_act_units; /* (peak ACT − 8) / a */
    size_t derived_units;
    StepStats step;
    double flop_overhead;
    Estimate step_seconds, time_overhead;
} StepRow;

/* Peak ACT of a step in units of one activation a = B·W·4 bytes, as derived by hand (the
 * ledger adds 8 bytes: the loss and its seed gradient). tests/test_checkpoint.c spells it
 * out for none (2N + 4), full (N + 6) and sqrt at square N (s + 2k + 5); in general the
 * peak comes in backward while some region j is replayed:
 *
 *   2 (the batch) + j (the inputs of regions 1..j, still stored) + 2 (the region's output
 *   gradient and its input gradient buffer) + 2·size − 1 (its replayed blocks' relu outputs
 *   and inner inputs) + 3 gradients at its last relu (2 for a one-block region, whose input
 *   gradient is the buffer already counted),
 *
 * and the peak is the largest of these over the regions: with unequal sqrt segments
 * (N = 32: sizes 6,6,5,5,5,5) it is not always the last one. */
static size_t derived_units(const Schedule *schedule, int N)
{
    if (schedule->strategy == STRATEGY_NONE) return (size_t)(2 * N + 4);
    int worst = 0;
    for (int j = 0; j < schedule->n_segments; j++) {
        const int size = schedule->segments[j].count;
        const int units = 2 + j + 2 + (2 * size - 1) + (size > 1 ? 3 : 2);
        if (units > worst) worst = units;
    }
    return (size_t)worst;
}

/* Builds the chain of depth N, with AdamW and a batch of `task`'s, trains it under the three
 * strategies alternately, frees it. */
static RematStatus measure_depth(const Config *c, MlpTask *task, int N, StepRow rows[N_KINDS], Progress *progress)
{
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);
    ModelBench g;
    RematStatus status = mlp_bench_create(&g, &(MlpShape){.N = N, .W = c->width, .B = c->batch}, task, &adamw);
    Variant variants[N_KINDS] = {{0}};
    for (int k = 0; k < c->n_strategies && status == REMAT_OK; k++) {
        variants[k] = (Variant){.name = name_of(&STRATEGY_NAMES, c->strategies[k].kind),
                                .schedule = schedule_for_strategy(&c->strategies[k], N)};
        if (!variants[k].schedule) status = remat_last_status();
    }
    TrainCtx ctx = {.training = true};
    char label[32];
    snprintf(label, sizeof label, "N=%d", N);
    Timing timing = {0};
    StepStats stats[N_KINDS];
    if (status == REMAT_OK)
        status = steps_alternate(&g, variants, c->n_strategies, NULL, &ctx, &c->plan, progress, label, stats, &timing);
    const size_t a = (size_t)c->batch * (size_t)c->width * sizeof(float); /* one activation */
    for (int k = 0; k < c->n_strategies && status == REMAT_OK; k++) {
        const Schedule *s = variants[k].schedule;
        rows[k] = (StepRow){.n_layers = N, .strategy = variants[k].name, .segments = s->n_segments,
                            .derived_units = derived_units(s, N), .step = stats[k],
                            .peak_act_units = (double)(stats[k].peak[MEM_ACT] - 8) / (double)a,
                            .flop_overhead = flop_overhead(&stats[k]),
                            .step_seconds = timing_median(&timing, k, STEP_SECONDS),
                            .time_overhead = timing_ratio(&timing, k, 0, STEP_SECONDS)};
    }
    timing_free(&timing);
    for (int k = 0; k < c->n_strategies; k++) schedule_free(variants[k].schedule);
    model_bench_free(&g);
    return status;
}

/* The least-squares slope of ln(y) against ln(x). */
static double loglog_slope(const double *x, const double *y, int n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        const double lx = log(x[i]), ly = log(y[i]);
        sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
    }
    return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

static const ResultsColumn STEP_COLUMNS[] = {
    COLUMN(StepRow, n_layers, INT, "layers", SHOW("N", "", 4, 0)),
    COLUMN(StepRow, strategy, STR, "", SHOW("strat", "", 5, 0)),
    COLUMN(StepRow, segments, INT, "regions", SHOW("segs", "", 4, 0)),
    COLUMN_AS("peak_act", StepRow, step.peak[MEM_ACT], SIZE, "bytes", SHOW("peak ACT", "MiB", 9, 2)),
    COLUMN(StepRow, peak_act_units, DOUBLE, "activations of B*W floats", SHOW("in a", "", 5, 0)),
    COLUMN(StepRow, derived_units, SIZE, "activations of B*W floats", SHOW("derived", "", 7, 0)),
    COLUMN_AS("peak_resident", StepRow, step.peak_resident, SIZE, "bytes", SHOW("peak all", "MiB", 9, 2)),
    COLUMN_AS("params", StepRow, step.start[MEM_PARAM], SIZE, "bytes"),
    COLUMN_AS("grads", StepRow, step.start[MEM_GRAD], SIZE, "bytes"),
    COLUMN_AS("optimizer", StepRow, step.start[MEM_OPTIM], SIZE, "bytes"),
    COLUMN_AS("forward_flops", StepRow, step.flops[PHASE_FORWARD], U64, "FLOPs", SHOW("fwd", "GFLOP", 7, 3)),
    COLUMN_AS("backward_flops", StepRow, step.flops[PHASE_BACKWARD], U64, "FLOPs", SHOW("bwd", "GFLOP", 7, 3)),
    COLUMN_AS("recompute_flops", StepRow, step.flops[PHASE_RECOMPUTE], U64, "FLOPs",
              SHOW("recompute", "GFLOP", 9, 3)),
    COLUMN_AS("optimizer_flops", StepRow, step.flops[PHASE_OPTIMIZER], U64, "FLOPs"),
    COLUMN(StepRow, flop_overhead, DOUBLE, "ratio", SHOW("FLOP ovh", "%", 8, 1)),
    COLUMN_TIMED(StepRow, step_seconds, "seconds", SHOW("step (95% interval)", "ms", 22, 2)),
    COLUMN_TIMED(StepRow, time_overhead, "ratio", SHOW("time overhead (95% interval, rounds)", "+%", 27, 1)),
    COLUMN_SAMPLES,
};

/* One record of the slopes table: a strategy's peak ACT against depth, on log-log axes. */
typedef struct SlopeRow {
    const char *strategy;
    double slope, slope_last_doubling, theory;
} SlopeRow;

static const ResultsColumn SLOPE_COLUMNS[] = {
    COLUMN(SlopeRow, strategy, STR, "", SHOW("strategy", "", 9, 0)),
    COLUMN(SlopeRow, slope, DOUBLE, "d ln(peak ACT) / d ln(N), least squares over all N",
           SHOW("fitted slope", "", 14, 3)),
    COLUMN(SlopeRow, slope_last_doubling, DOUBLE, "d ln(peak ACT) / d ln(N) between the two largest N",
           SHOW("last doubling slope", "", 20, 3)),
    COLUMN(SlopeRow, theory, DOUBLE, "d ln(peak ACT) / d ln(N) as N grows", SHOW("theory", "", 8, 2)),
};

static void print_and_record_steps(const Config *c, StepRow rows[][N_KINDS], Results *results)
{
    ResultsTable *steps = RESULTS_TABLE(results, "steps", "one AdamW training step per depth and strategy",
                                        STEP_COLUMNS);
    const size_t a = (size_t)c->batch * (size_t)c->width * sizeof(float);
    printf("\n  one AdamW step of the MLP chain, W = %d, B = %d (a = one B*W activation = %zu bytes)\n",
           c->width, c->batch, a);
    results_print_head(steps, 0);
    int exact = 0;
    for (int i = 0; i < c->n_depths; i++)
        for (int k = 0; k < c->n_strategies; k++) {
            exact += rows[i][k].step.peak[MEM_ACT] == rows[i][k].derived_units * a + 8;
            results_add_row(steps, &rows[i][k]);
        }
    printf("  (in %d of %d rows the peak is exactly the count derived by hand, times a, + 8 bytes: see\n"
           "  derived_units)\n", exact, c->n_depths * c->n_strategies);
}

static void print_and_record_slopes(const Config *c, StepRow rows[][N_KINDS], Results *results)
{
    ResultsTable *slopes = RESULTS_TABLE(results, "slopes", "log-log slope of peak ACT against N", SLOPE_COLUMNS);
    printf("\n  peak activation memory against depth, on log-log axes\n");
    results_print_head(slopes, 0);
    double n[MAX_DEPTHS], peak[MAX_DEPTHS];
    for (int i = 0; i < c->n_depths; i++) n[i] = c->depths[i];
    for (int k = 0; k < c->n_strategies; k++) {
        const StrategyKind kind = c->strategies[k].kind;
        for (int i = 0; i < c->n_depths; i++) peak[i] = (double)rows[i][k].step.peak[MEM_ACT];
        const int last = c->n_depths - 1;
        const SlopeRow r = {.strategy = name_of(&STRATEGY_NAMES, kind), .slope = loglog_slope(n, peak, c->n_depths),
                            .slope_last_doubling = log(peak[last] / peak[last - 1]) / log(n[last] / n[last - 1]),
                            .theory = kind == STRATEGY_SQRT ? 0.5 : 1.0}; /* linear, or sqrt for sqrt */
        results_add_row(slopes, &r);
    }
    printf("  The fit runs below the theory because of the constant terms of the derived counts\n"
           "  (the batch, the last block's gradients): they weigh most at small N.\n");
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    Config c = o->quick ? (Config){.width = 64, .batch = 16, .depths = {8, 16, 32, 64, 128, 256}, .n_depths = 6}
                        : (Config){.width = 256, .batch = 32, .depths = {4, 8, 16, 32, 64, 128, 256}, .n_depths = 7};
    c.n_strategies = bench_sweep(&INFO, o, NULL, c.strategies);
    results_config_str(results, "model", "mlp");
    results_config_num(results, "width", c.width);
    results_config_num(results, "batch", c.batch);
    results_config_ints(results, "depths", c.depths, c.n_depths);
    results_config_str(results, "optimizer", "adamw");
    c.plan = bench_timing_plan(o, results, o->quick ? 1 : 2, 9, 2.0 / c.n_depths);
    MlpTask *task = mlp_task_create(c.width, 7); /* the teacher: resident through every depth */
    RematStatus status = task ? REMAT_OK : remat_last_status();
    StepRow rows[MAX_DEPTHS][N_KINDS] = {0};
    Progress progress;
    progress_begin(&progress, stdout, c.n_depths * timing_max_runs(&c.plan, c.n_strategies));
    for (int i = 0; i < c.n_depths && status == REMAT_OK; i++)
        status = measure_depth(&c, task, c.depths[i], rows[i], &progress);
    progress_end(&progress);
    mlp_task_free(task);
    if (status == REMAT_OK) {
        print_and_record_steps(&c, rows, results);
        print_and_record_slopes(&c, rows, results);
    }
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
