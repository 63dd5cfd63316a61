/*
 * bench_timeline.c — quiz question 2, seen over time: a forward piles up the activations
 * backward will need, and backward releases them; checkpointing turns the pile into a
 * sawtooth.
 *
 * Per strategy, and with offload, AdamW steps of the GPT with the memory ledger's event
 * timeline recording (mem_timeline_start): every allocation and free, its time, phase and
 * FLOPs so far, and every kind's bytes after it. Of three recorded steps it keeps the one
 * of median time; its events go to bench_timeline.events.csv, which plots.sh draws against
 * the FLOPs executed, a clock a busy machine does not stretch. The offload series spill to
 * the default directory with the page cache kept: bench_offload measures the disk itself.
 *
 * What it is not: a profiler. The times are those of the ledger's events, which include
 * the small cost of recording them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/measure.h"

/* What --strategy may pick; it keeps none, that strategy, and the offload series run under
 * it (offload with none, offload+sqrt with sqrt). */
static const StrategyKind KINDS[] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SQRT, STRATEGY_SELECTIVE};

static const BenchInfo INFO = {
    .name = "bench_timeline",
    .question = "quiz question 2: the forward keeps activations because backward needs them; "
                "memory over one step, per strategy",
    .about = "  One AdamW step of the GPT per strategy and with offload, the ledger's every event (bytes\n"
             "  by kind, time, phase) into bench_timeline.events.csv.",
    .quick = "L = 4, D = 128, H = 4, T = 64, B = 4 (a second)",
    .full = "L = 8, D = 128, H = 4, T = 128, B = 8",
    .strategies = KINDS,
    .n_strategies = 4,
    .step_flags = STEP_FLAG_POLICY | STEP_FLAG_NO_RNG_REPLAY,
    .model_flags = true,
};

enum { TIMELINE_CAPACITY = 1 << 20, WARMUP_STEPS = 3, RECORDED_STEPS = 3 };

/* One line of the plot: a strategy, and whether what it saves goes to a spill file. */
typedef struct Series {
    const char *name;
    StrategyKind kind;
    bool offload;
    OffloadPolicy policy;
    int prefetch;
} Series;

static const Series SERIES[] = {
    {"none", STRATEGY_NONE, false, OFFLOAD_ALL, 0},
    {"full", STRATEGY_FULL, false, OFFLOAD_ALL, 0},
    {"sqrt", STRATEGY_SQRT, false, OFFLOAD_ALL, 0},
    {"selective", STRATEGY_SELECTIVE, false, OFFLOAD_ALL, 0},
    {"offload", STRATEGY_NONE, true, OFFLOAD_ALL, OFFLOAD_PREFETCH},
    {"offload+sqrt", STRATEGY_SQRT, true, OFFLOAD_BOUNDARY, 0},
};
enum { N_SERIES = sizeof SERIES / sizeof SERIES[0] };

/* One ledger event of a recorded step, as the events table records it. */
typedef struct EventRow {
    const char *strategy;
    size_t event;
    double time_ms;
    uint64_t flops;
    const char *phase, *kind, *label;
    double delta;
    size_t params, grads, optimizer, act, work, resident, disk;
} EventRow;

static const ResultsColumn EVENT_COLUMNS[] = {
    COLUMN(EventRow, strategy, STR, ""), COLUMN(EventRow, event, SIZE, "index"),
    COLUMN(EventRow, time_ms, DOUBLE, "milliseconds since the step began"),
    COLUMN(EventRow, flops, U64, "FLOPs executed since the step began, all phases"), COLUMN(EventRow, phase, STR, ""),
    COLUMN(EventRow, kind, STR, ""), COLUMN(EventRow, label, STR, "a mark's (dtr.evict, dtr.remat), else empty"),
    COLUMN(EventRow, delta, DOUBLE, "bytes"), COLUMN(EventRow, params, SIZE, "bytes"),
    COLUMN(EventRow, grads, SIZE, "bytes"), COLUMN(EventRow, optimizer, SIZE, "bytes"),
    COLUMN(EventRow, act, SIZE, "bytes"), COLUMN(EventRow, work, SIZE, "bytes"),
    COLUMN(EventRow, resident, SIZE, "bytes"), COLUMN(EventRow, disk, SIZE, "bytes"),
};

/* One record of the steps table: a strategy's recorded step, `step`. */
typedef struct StepRow {
    const char *strategy;
    size_t events;
    StepStats step;
    uint64_t flops; /* printed, not recorded */
    Estimate step_seconds;
} StepRow;

static const ResultsColumn STEP_COLUMNS[] = {
    COLUMN(StepRow, strategy, STR, "", SHOW("strategy", "", 12, 0)),
    COLUMN(StepRow, events, SIZE, "events", SHOW("events", "", 8, 0)),
    COLUMN_AS("act_stored", StepRow, step.act_stored, SIZE, "bytes", SHOW("stored", "MiB", 9, 2)),
    COLUMN_AS("peak_act", StepRow, step.peak[MEM_ACT], SIZE, "bytes", SHOW("peak ACT", "MiB", 9, 2)),
    COLUMN_AS("peak_resident", StepRow, step.peak_resident, SIZE, "bytes", SHOW("peak all", "MiB", 9, 2)),
    COLUMN_AS("peak_disk", StepRow, step.peak[MEM_DISK], SIZE, "bytes", SHOW("peak DISK", "MiB", 9, 2)),
    COLUMN_PRINTED(StepRow, flops, U64, SHOW("", "GFLOP", 9, 3)),
    COLUMN_TIMED(StepRow, step_seconds, "seconds", SHOW("step (range of the 3 recorded)", "ms", 0, 2)), COLUMN_SAMPLES,
};

/* Copies the recorded events of one strategy's step into the events table. */
static void record_events(ResultsTable *events, const char *strategy, const MemEvent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t resident = 0;
        for (int k = 0; k < MEM_DISK; k++) resident += e[i].current[k];
        const size_t *at = e[i].current;
        results_add_row(events, &(EventRow){.strategy = strategy, .event = i, .time_ms = 1e3 * e[i].seconds,
                                            .flops = e[i].flops, .phase = name_of(&FLOP_PHASE_NAMES, e[i].phase),
                                            .kind = name_of(&MEM_KIND_NAMES, e[i].kind),
                                            .label = e[i].label ? e[i].label : "", .delta = (double)e[i].delta,
                                            .params = at[MEM_PARAM], .grads = at[MEM_GRAD], .optimizer = at[MEM_OPTIM],
                                            .act = at[MEM_ACT], .work = at[MEM_WORK], .resident = resident,
                                            .disk = at[MEM_DISK]});
    }
}

/* WARMUP_STEPS untimed steps of the strategy (its first steps are slower: the allocator is
 * still taking pages from the system), then RECORDED_STEPS steps with the timeline
 * recording; the events of the one with the median time go to `events`, its figures to
 * *row. */
static RematStatus timeline_step(ModelBench *g, const Series *series, const BenchOptions *o, ResultsTable *events,
                                 StepRow *row)
{
    StepStats warm;
    const Strategy s = bench_strategy(o, series->kind, NULL);
    Schedule *schedule = schedule_for_strategy(&s, g->model->n_layers);
    OffloadOptions oo = OFFLOAD_DEFAULTS(series->policy);
    oo.prefetch = series->prefetch;
    Offload *off = schedule && series->offload ? offload_create(&oo) : NULL;
    RematStatus status = !schedule || (series->offload && !off) ? remat_last_status() : REMAT_OK;
    const Variant v = bench_variant(o, (Variant){.name = series->name, .schedule = schedule, .offload = off}, true);
    TrainCtx ctx = bench_ctx(3, 4);
    for (int i = 0; i < WARMUP_STEPS && status == REMAT_OK; i++)
        status = step_measure(g, &v, &ctx, &warm);

    MemEvent *runs[RECORDED_STEPS] = {0}; /* each recorded step's events, copied */
    size_t counts[RECORDED_STEPS] = {0};
    StepStats run_stats[RECORDED_STEPS];
    double seconds[RECORDED_STEPS];
    for (int r = 0; r < RECORDED_STEPS && status == REMAT_OK; r++) {
        if ((status = mem_timeline_start(TIMELINE_CAPACITY)) != REMAT_OK) break;
        status = step_measure(g, &v, &ctx, &run_stats[r]);
        mem_timeline_stop();
        seconds[r] = run_stats[r].seconds;
        const MemEvent *e = mem_timeline_events(&counts[r]);
        if (status == REMAT_OK && mem_timeline_dropped())
            status = remat_fail(REMAT_ESTATE, "the timeline dropped %zu events past its %d: raise TIMELINE_CAPACITY",
                                mem_timeline_dropped(), TIMELINE_CAPACITY);
        if (status == REMAT_OK && !(runs[r] = malloc(counts[r] * sizeof *runs[r])))
            status = remat_fail(REMAT_ENOMEM, "no memory for a copy of %zu events", counts[r]);
        if (status == REMAT_OK) memcpy(runs[r], e, counts[r] * sizeof *e);
    }
    mem_timeline_free();
    if (status == REMAT_OK) {
        const Estimate median = estimate_median(seconds, RECORDED_STEPS);
        int mid = 0; /* the step of median time (the first, if two took exactly as long) */
        while (seconds[mid] != median.value) mid++;
        const StepStats *st = &run_stats[mid];
        *row = (StepRow){.strategy = series->name, .events = counts[mid], .step = *st, .step_seconds = median};
        for (int p = 0; p < PHASE_COUNT; p++) row->flops += st->flops[p];
        record_events(events, v.name, runs[mid], counts[mid]);
    }
    for (int r = 0; r < RECORDED_STEPS; r++) free(runs[r]);
    offload_free(off);
    schedule_free(schedule);
    return status;
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    const GptShape shape = o->quick ? (GptShape){.L = 4, .C = 128, .H = 4, .T = 64, .B = 4, .dropout = 0.1f}
                                    : (GptShape){.L = 8, .C = 128, .H = 4, .T = 128, .B = 8, .dropout = 0.1f};
    results_config_gpt(results, &shape);
    results_config_str(results, "optimizer", "adamw");
    results_config_str(results, "selective_policy",
                       o->step.strategy.policy ? o->step.strategy.policy->name : POLICY_ATTENTION_CORE.name);
    ResultsTable *steps = RESULTS_TABLE(results, "steps", "the recorded step of each strategy", STEP_COLUMNS);
    ResultsTable *events = results_row_table(results, "events", "every ledger event of each recorded step",
                                             EVENT_COLUMNS, RESULTS_COUNT(EVENT_COLUMNS), false);
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);
    ModelBench g;
    RematStatus status = gpt_bench_create(&g, &shape, &adamw);

    const Series *series[N_SERIES];
    int n = 0;
    for (int k = 0; k < N_SERIES; k++)
        if (bench_measures(o, SERIES[k].kind)) series[n++] = &SERIES[k];
    StepRow rows[N_SERIES];
    Progress progress;
    progress_begin(&progress, stdout, n);
    for (int k = 0; k < n && status == REMAT_OK; k++) {
        status = timeline_step(&g, series[k], o, events, &rows[k]);
        progress_tick(&progress, series[k]->name);
    }
    progress_end(&progress);

    if (status == REMAT_OK) {
        char text[64];
        printf("\n  GPT %s, AdamW; one recorded step per strategy\n", gpt_shape_str(text, sizeof text, &shape));
        results_print_head(steps, 0);
        for (int k = 0; k < n; k++) results_add_row(steps, &rows[k]);
        printf("  (\"stored\": activations held between the forward and the backward; DISK: bytes in the\n"
               "  spill file, not resident)\n");
    }
    model_bench_free(&g);
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
