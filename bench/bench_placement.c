/*
 * bench_placement.c — quiz question 3: why checkpointing's overhead must be measured on the
 * actual model: placement, operators and hardware decide what a replay costs.
 *
 * The same GPT with its checkpoint regions placed five ways (PLACEMENTS), on 1 thread and
 * on 2, placements interleaved step by step (bench/timing.h): activation memory saved
 * against none, recompute FLOP overhead, time overhead, and their ratio, what a recomputed
 * FLOP costs against the step's average one. Attention's softmax and dropout do few FLOPs
 * per byte, the MLP's matmuls many, and a second thread speeds up matmuls more than
 * elementwise loops: the same FLOP overhead costs different time.
 *
 * What it is not: a test; it asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/measure.h"
#include "base/platform.h"

static const BenchInfo INFO = {
    .name = "bench_placement",
    .question = "quiz question 3: checkpoint placement, operators and hardware decide what a replay costs",
    .about = "  The GPT with regions as whole blocks, attention only, MLP only, every other block, on\n"
             "  1 and 2 threads: memory saved, FLOP and time overhead, the time of a recomputed FLOP.",
    .quick = "L = 2, D = 128, T = 128, B = 2, rounds until +-5 points or 1.5 s per thread count",
    .full = "L = 4, D = 256, H = 4, T = 256, B = 4, 7 timed rounds after 2 warm-up rounds",
    .timed = true,
    .step_flags = STEP_FLAG_NO_RNG_REPLAY,
    .model_flags = true,
};

/* Recomputes the ops whose tag starts with the policy's prefix (`user`), keeps the rest. */
static PolicyDecision recompute_prefix(const char *op, const char *tag, void *user)
{
    (void)op;
    const char *prefix = user;
    return tag && !strncmp(tag, prefix, strlen(prefix)) ? POLICY_RECOMPUTE : POLICY_SAVE;
}

static const Policy ATTENTION_ONLY = {"attention only", recompute_prefix, "attn."};
static const Policy MLP_ONLY = {"MLP only", recompute_prefix, "mlp."};

/* Blocks 0, 2, 4, ... as checkpoint regions and the others plain: a schedule of one-block
 * segments, every other one a region, replaying as `s` says. NULL on error. */
static Schedule *every_other_block(const Strategy *s, int n_layers)
{
    Segment *segs = calloc((size_t)n_layers, sizeof *segs);
    if (!segs)
        return remat_fail_null(REMAT_ENOMEM, "no memory for %d segments", n_layers);
    for (int i = 0; i < n_layers; i++) segs[i] = (Segment){i, 1, i % 2 == 0 ? SEGMENT_REGION : SEGMENT_PLAIN, NULL, 0};
    Schedule *schedule = schedule_create(STRATEGY_FULL, segs, n_layers, n_layers);
    free(segs);
    if (schedule) schedule->replay = s->replay;
    return schedule;
}

enum { N_PLACEMENTS = 5, MAX_THREADS = 2 };

/* How each placement is made: a strategy (with a policy), or the schedule above. */
static const struct {
    const char *name;
    StrategyKind kind;
    const Policy *policy;
    bool every_other;
} PLACEMENTS[N_PLACEMENTS] = {
    {"none", STRATEGY_NONE, NULL, false},
    {"whole blocks", STRATEGY_FULL, NULL, false},
    {"attention only", STRATEGY_SELECTIVE, &ATTENTION_ONLY, false},
    {"MLP only", STRATEGY_SELECTIVE, &MLP_ONLY, false},
    {"every other", STRATEGY_FULL, NULL, true},
};

/* (time overhead − 1) / FLOP overhead, applied to the estimate and its interval. */
static Estimate per_flop(const Estimate *time, double flops)
{
    return (Estimate){(time->value - 1.0) / flops, (time->lo - 1.0) / flops, (time->hi - 1.0) / flops, time->samples};
}

/* One record: a placement's step on one thread count (its last, `step`), against none's. */
typedef struct Row {
    int threads;
    const char *placement;
    StepStats step;
    double act_saved, act_saved_fraction, flop_overhead;
    Estimate step_seconds, time_overhead, time_per_flop_overhead; /* the last: none without recomputation */
} Row;

static const ResultsColumn COLUMNS[] = {
    COLUMN(Row, threads, INT, "threads"), COLUMN(Row, placement, STR, "", SHOW("placement", "", 15, 0)),
    COLUMN_AS("act_stored", Row, step.act_stored, SIZE, "bytes", SHOW("stored", "MiB", 10, 2)),
    COLUMN_AS("peak_act", Row, step.peak[MEM_ACT], SIZE, "bytes", SHOW("peak ACT", "MiB", 10, 2)),
    COLUMN(Row, act_saved, DOUBLE, "bytes"),
    COLUMN(Row, act_saved_fraction, DOUBLE, "ratio", SHOW("ACT saved", "%", 9, 1)),
    COLUMN_AS("recompute_flops", Row, step.flops[PHASE_RECOMPUTE], U64, "FLOPs", SHOW("recompute", "GFLOP", 10, 3)),
    COLUMN(Row, flop_overhead, DOUBLE, "ratio", SHOW("FLOP ovh", "%", 8, 1)),
    COLUMN_TIMED(Row, step_seconds, "seconds", SHOW("step (95% interval)", "ms", 22, 2)),
    COLUMN_TIMED(Row, time_overhead, "ratio", SHOW("time overhead (95% interval, rounds)", "+%", 27, 1)),
    COLUMN_TIMED(Row, time_per_flop_overhead, "ratio", SHOW("time ovh / FLOP ovh", "", 22, 2)), COLUMN_SAMPLES,
};

/* The table on `threads` threads, printed and recorded: each placement's last step (stats[p])
 * against none's (stats[0]). */
static void print_and_record(int threads, const StepStats *stats, const Timing *timing, ResultsTable *table)
{
    printf("\n  %d thread%s\n", threads, threads == 1 ? "" : "s");
    results_print_head(table, 0);
    for (int p = 0; p < N_PLACEMENTS; p++) {
        const StepStats *s = &stats[p];
        Row r = {.threads = threads, .placement = PLACEMENTS[p].name, .step = *s,
                 .act_saved = (double)stats[0].peak[MEM_ACT] - (double)s->peak[MEM_ACT],
                 .flop_overhead = flop_overhead(s), .step_seconds = timing_median(timing, p, STEP_SECONDS),
                 .time_overhead = timing_ratio(timing, p, 0, STEP_SECONDS)};
        r.act_saved_fraction = r.act_saved / (double)stats[0].peak[MEM_ACT];
        if (r.flop_overhead > 0) r.time_per_flop_overhead = per_flop(&r.time_overhead, r.flop_overhead);
        results_add_row(table, &r);
    }
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    const GptShape shape = o->quick ? (GptShape){.L = 2, .C = 128, .H = 4, .T = 128, .B = 2, .dropout = 0.1f}
                                    : (GptShape){.L = 4, .C = 256, .H = 4, .T = 256, .B = 4, .dropout = 0.1f};
    const int threads_before = platform_info().threads;
    const int n_threads = platform_info().cores < MAX_THREADS ? platform_info().cores : MAX_THREADS;
    results_config_gpt(results, &shape);
    results_config_str(results, "optimizer", "adamw");
    const TimingPlan plan = bench_timing_plan(o, results, o->quick ? 1 : 2, 7, 1.5);
    ResultsTable *table = RESULTS_TABLE(results, "placements", "one AdamW step per placement and thread count",
                                        COLUMNS);
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);
    ModelBench g;
    RematStatus status = gpt_bench_create(&g, &shape, &adamw);
    Variant variants[N_PLACEMENTS] = {{0}};
    for (int p = 0; p < N_PLACEMENTS && status == REMAT_OK; p++) {
        const Strategy s = bench_strategy(o, PLACEMENTS[p].kind, PLACEMENTS[p].policy);
        Schedule *schedule = PLACEMENTS[p].every_other ? every_other_block(&s, g.model->n_layers)
                                                       : schedule_for_strategy(&s, g.model->n_layers);
        if (!schedule) status = remat_last_status();
        variants[p] = bench_variant(o, (Variant){.name = PLACEMENTS[p].name, .schedule = schedule}, true);
    }

    StepStats stats[MAX_THREADS][N_PLACEMENTS];
    Timing timing[MAX_THREADS] = {{0}};
    TrainCtx ctx = bench_ctx(3, 4);
    Progress progress;
    progress_begin(&progress, stdout, n_threads * timing_max_runs(&plan, N_PLACEMENTS));
    for (int t = 0; t < n_threads && status == REMAT_OK; t++) {
        char label[32];
        snprintf(label, sizeof label, "%d thread%s", t + 1, t ? "s" : "");
        status = platform_set_threads(t + 1);
        if (status == REMAT_OK)
            status = steps_alternate(&g, variants, N_PLACEMENTS, NULL, &ctx, &plan, &progress, label, stats[t],
                                     &timing[t]);
    }
    progress_end(&progress);
    platform_set_threads(threads_before);

    if (status == REMAT_OK) {
        char text[64];
        printf("\n  GPT %s, AdamW; \"time ovh / FLOP ovh\" = (time overhead - 1) / recompute FLOP overhead:\n"
               "  above 1, a recomputed FLOP costs more time than the step's average FLOP\n",
               gpt_shape_str(text, sizeof text, &shape));
        for (int t = 0; t < n_threads; t++) print_and_record(t + 1, stats[t], &timing[t], table);
    }
    for (int t = 0; t < n_threads; t++) timing_free(&timing[t]);
    for (int p = 0; p < N_PLACEMENTS; p++) schedule_free(variants[p].schedule);
    model_bench_free(&g);
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
