/*
 * bench_pipeline.c — pipeline parallelism over MPI (parallel/pipeline.h): a step's bubble, the
 * micro-batches stage 0 holds at once and its peak activations under GPipe and 1F1B for M = 1,
 * 2, 4 and 8 micro-batches, each beside its theory, and the step's time against one process
 * accumulating the same M micro-batches. Run it as P ≥ 2 ranks, a stage each:
 * `mpirun -np 2 build/bench/bench_pipeline`. It writes <dir>/bench_pipeline.json and CSV;
 * with --show-schedule it prints the schedule each rank runs as a timeline instead.
 *
 * A step's bubble is 1 − Σ_s busy_s / (P · span): busy_s is stage s's time inside pipe_run
 * less its waits in receives (the ledger's idle_seconds), the span the longest pipe_run of the
 * step, the ranks having left a barrier together. The gradients' broadcast and the optimizer
 * after it are in the step's time, not in the span. (P−1)/(M+P−1) assumes equal stages; with
 * stage s busy t_s per micro-batch the span is Σ t_s + (M−1)·max t_s, the bubble
 * 1 − M·Σ t_s / (P · span): the "uneven" theory. Bytes and live micro-batches are exact;
 * times are only as quiet as the machine. It asserts nothing about time, but exits 1 when a
 * boundary moves other than 2·M·B·T·D·4 bytes a step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/measure.h"
#include "parallel/pipeline.h"
#include "base/platform.h"

enum { N_M = 4 };
static const int MICRO_BATCHES[N_M] = {1, 2, 4, 8};

static bool show_schedule;
static unsigned show_schedule_given;
static const Flag SHOW_SCHEDULE = {
    .name = "--show-schedule", .type = FLAG_SWITCH,
    .help = "print each rank's schedule as a timeline for every M, and measure nothing"};

static BenchInfo info = {
    .name = "bench_pipeline",
    .question = "pipelines: the bubble and the micro-batches in flight of GPipe and 1F1B",
    .about = "  Run as P ranks (mpirun -np P), one stage each. For M = 1, 2, 4, 8 micro-batches of the GPT\n"
             "  (L=8, D=128, H=4, T=64, B=4, dropout 0.1, AdamW) under gpipe and 1f1b: the bubble against\n"
             "  (P-1)/(M+P-1), the micro-batches stage 0 holds at once against M and min(M,P), stage 0's\n"
             "  peak activations under none and full, the bytes over each boundary against 2*M*B*T*D*4,\n"
             "  each stage's busy time, and the step against one process accumulating M micro-batches.",
    .quick = "a GPT of 2 blocks of width 16, 6 rounds (seconds)",
    .full = "the GPT of the header, 15 rounds",
    .timed = true,
    .own = {.flags = &SHOW_SCHEDULE, .n = 1, .opts = &show_schedule, .accepted = ~0u, .given = &show_schedule_given},
};

/* ---- the schedule as a picture ------------------------------------------------------------ */

/* Every stage's actions (pipe_actions) laid out in time, each one unit long: an action starts
 * once the stage's action before it is done and its input has come (a forward's from the
 * previous stage's forward of that micro-batch, a backward's from the next stage's backward).
 * "--" is a unit the stage waits: the bubble. Prints on standard output. */
static RematStatus show_timeline(PipeSchedule kind, int P, int M)
{
    const int n = 2 * M, width = 4 * n * P + 1; /* an action at least runs a unit: P·n units of 4 characters */
    PipeAction *acts = malloc((size_t)P * (size_t)n * sizeof *acts);
    int *next = calloc((size_t)P, sizeof *next), *done = malloc((size_t)P * (size_t)n * sizeof *done);
    char *rows = calloc((size_t)P * (size_t)width, 1);
    if (!acts || !next || !done || !rows) {
        free(acts), free(next), free(done), free(rows);
        return remat_fail(REMAT_ENOMEM, "bench_pipeline: no memory for a timeline of %d stages", P);
    }
    for (int s = 0; s < P; s++) pipe_actions(kind, P, s, M, acts + s * n);
    for (int i = 0; i < P * n; i++) done[i] = -1; /* done[s·n + r]: when F r ended; [s·n + M + r]: B r */
    int units = 0;
    for (int left = P * n; left > 0; units++)
        for (int s = 0; s < P; s++) {
            if (next[s] == n) continue;
            const PipeAction a = acts[s * n + next[s]];
            const bool fwd = a.kind == PIPE_FORWARD;
            int from = 0; /* when its input came: the last stage's backward needs only its forward */
            if (fwd && s > 0) from = done[(s - 1) * n + a.micro_batch];
            if (!fwd) from = s + 1 < P ? done[(s + 1) * n + M + a.micro_batch] : done[s * n + a.micro_batch];
            char *end = rows + s * width + strlen(rows + s * width);
            if (from < 0 || from > units) { /* its input is not there yet */
                strcpy(end, "--  ");
                continue;
            }
            snprintf(end, 5, "%c%-3d", fwd ? 'F' : 'B', a.micro_batch);
            done[s * n + (fwd ? 0 : M) + a.micro_batch] = units + 1;
            next[s]++, left--;
        }
    printf("\n  %s, P = %d, M = %d: %d units, each stage idle %d of them: %.1f%% (theory (P-1)/(M+P-1) = %.1f%%)\n",
           PIPE_SCHEDULE_NAMES.names[kind], P, M, units, units - n, 100.0 * (units - n) / units,
           100.0 * (P - 1) / (M + P - 1));
    for (int s = 0; s < P; s++) {
        char *row = rows + s * width;
        for (char *end = row + strlen(row); end > row && end[-1] == ' ';) *--end = '\0';
        printf("    stage %d: %s\n", s, row);
    }
    free(acts), free(next), free(done), free(rows);
    return REMAT_OK;
}

/* ---- one configuration -------------------------------------------------------------------- */

/* A record: one schedule and M, stage 0's figures with the theory beside them. */
typedef struct PipeRow {
    const char *schedule;
    int stages, micro_batches, live_micro_batches_stage0, live_theory;
    double bubble_theory;
    size_t peak_act_stage0, peak_act_stage0_full;
    uint64_t boundary_bytes, boundary_bytes_formula;
    Estimate bubble_fraction, bubble_uneven, busy_first, busy_last, step_seconds, accumulate_seconds, step_ratio;
} PipeRow;

static const ResultsColumn COLUMNS[] = {
    COLUMN(PipeRow, schedule, STR, "", SHOW_IN(3u, "schedule", "", 8, 0)),
    COLUMN(PipeRow, stages, INT, "ranks", SHOW_IN(3u, "P", "", 2, 0)),
    COLUMN(PipeRow, micro_batches, INT, "micro-batches", SHOW_IN(3u, "M", "", 2, 0)),
    COLUMN_TIMED(PipeRow, bubble_fraction, "ratio", SHOW("bubble (95% interval)", "%", 20, 1)),
    COLUMN(PipeRow, bubble_theory, DOUBLE, "ratio", SHOW("theory", "%", 6, 1)),
    COLUMN_TIMED(PipeRow, bubble_uneven, "ratio: the theory with the stages' busy times", SHOW("uneven theory", "%", 20, 1)),
    COLUMN(PipeRow, live_micro_batches_stage0, INT, "micro-batches", SHOW("live", "", 4, 0)),
    COLUMN(PipeRow, live_theory, INT, "micro-batches", SHOW("theory", "", 6, 0)),
    COLUMN(PipeRow, peak_act_stage0, SIZE, "bytes", SHOW("peak none", "KiB", 9, 0)),
    COLUMN(PipeRow, peak_act_stage0_full, SIZE, "bytes", SHOW("peak full", "KiB", 9, 0)),
    COLUMN(PipeRow, boundary_bytes, U64, "bytes per step", SHOW("boundary", "KiB", 9, 0)),
    COLUMN(PipeRow, boundary_bytes_formula, U64, "bytes per step", SHOW("2MBTD4", "KiB", 9, 0)),
    COLUMN_TIMED(PipeRow, busy_first, "seconds per step", SHOW_IN(2u, "stage 0 busy", "ms", 26, 1)),
    COLUMN_TIMED(PipeRow, busy_last, "seconds per step", SHOW_IN(2u, "last stage busy", "ms", 26, 1)),
    COLUMN_TIMED(PipeRow, step_seconds, "seconds", SHOW_IN(2u, "pipeline step", "ms", 26, 1)),
    COLUMN_TIMED(PipeRow, accumulate_seconds, "seconds", SHOW_IN(2u, "one process", "ms", 26, 1)),
    COLUMN_TIMED(PipeRow, step_ratio, "ratio", SHOW_IN(2u, "against it", "+%", 22, 0)),
    COLUMN_SAMPLES,
};

enum { ONE_PROCESS, PIPELINE, VARIANTS };                 /* what a round times */
enum { Q_SECONDS, Q_BUBBLE, Q_UNEVEN, Q_BUSY_FIRST, Q_BUSY_LAST, QUANTITIES }; /* what a run reports */

typedef struct Run {
    const DistGroup *g;
    StepPipeline *pipe;
    Step one; /* rank 0: the same micro-batches accumulated in one process */
    const MicroBatch *mb;
    int M;
    TrainCtx ctx;
    uint64_t *all; /* each rank's busy and span, in nanoseconds */
} Run;

/* One timed step: the one-process step on rank 0 (the others go on to the pipeline's barrier),
 * or the pipeline's on every rank, with its bubble from every rank's ledger. */
static RematStatus timed_step(void *user, int variant, double *values)
{
    Run *run = user;
    const int P = run->g->size;
    memset(values, 0, QUANTITIES * sizeof *values);
    if (variant == ONE_PROCESS && run->g->rank != 0) return REMAT_OK;
    size_t peak;
    const PipeLedger before = *step_pipeline_ledger(run->pipe, &peak);
    if (variant == PIPELINE) dist_barrier(run->g);
    StepResult result;
    const double t0 = platform_seconds();
    RematStatus status =
        variant == ONE_PROCESS ? step_run(&run->one, run->mb, run->M, &run->ctx, NULL, &result)
                               : step_pipeline_run(run->pipe, run->one.optim, run->mb, &run->ctx, &result);
    values[Q_SECONDS] = platform_seconds() - t0;
    if (variant == ONE_PROCESS || status != REMAT_OK) return status; /* a failure ends the job: others may wait */
    const PipeLedger *l = step_pipeline_ledger(run->pipe, &peak);
    const double span = l->seconds - before.seconds, idle = l->idle_seconds - before.idle_seconds;
    const uint64_t mine[2] = {(uint64_t)(1e9 * (span - idle)), (uint64_t)(1e9 * span)};
    status = dist_all_gather_u64(run->g, mine, 2, run->all);
    double busy = 0, longest = 0, slowest = 0;
    for (int s = 0; s < P; s++) {
        const double span_s = 1e-9 * (double)run->all[2 * s + 1], busy_s = 1e-9 * (double)run->all[2 * s];
        busy += busy_s;
        longest = span_s > longest ? span_s : longest;
        slowest = busy_s > slowest ? busy_s : slowest;
    }
    values[Q_BUBBLE] = longest > 0 ? 1 - busy / (P * longest) : 0;
    values[Q_UNEVEN] = busy > 0 ? 1 - busy * run->M / (P * (busy + (run->M - 1) * slowest)) : 0;
    values[Q_BUSY_FIRST] = 1e-9 * (double)run->all[0];
    values[Q_BUSY_LAST] = 1e-9 * (double)run->all[2 * (P - 1)];
    return status;
}

/* One step of a fresh pipeline from reset peaks: stage 0's peak activations (*peak), its live
 * micro-batches, and this rank's next boundary's bytes against 2·M·B·T·D·4; then, with
 * `plan`, the timed rounds. */
static RematStatus run_pipeline(Run *run, const GptShape *shape, PipeSchedule kind, StrategyKind strategy,
                                const TimingPlan *plan, PipeRow *row, size_t *peak)
{
    const Strategy s = strategy_defaults(strategy);
    if (!(run->pipe = step_pipeline_create(run->one.model, &s, run->g, kind, run->M))) return remat_last_status();
    mem_reset_peaks();
    StepResult result;
    RematStatus status = step_pipeline_run(run->pipe, run->one.optim, run->mb, &run->ctx, &result);
    const PipeLedger *l = step_pipeline_ledger(run->pipe, peak);
    const uint64_t bytes = l->sent_next + l->received_next, formula = 8ull * (uint64_t)run->M * (uint64_t)shape->B *
                                                                      (uint64_t)shape->T * (uint64_t)shape->C;
    row->live_micro_batches_stage0 = l->live_peak;
    row->boundary_bytes = bytes;
    row->boundary_bytes_formula = formula;
    if (status == REMAT_OK && run->g->rank + 1 < run->g->size && bytes != formula)
        status = remat_fail(REMAT_ESTATE, "stage %d's boundary moved %llu bytes in a step, not 2*M*B*T*D*4 = %llu",
                            run->g->rank, (unsigned long long)bytes, (unsigned long long)formula);
    Timing t = {0};
    if (status == REMAT_OK && plan) status = timing_run(plan, VARIANTS, QUANTITIES, timed_step, run, NULL, NULL, &t);
    if (status == REMAT_OK && plan) {
        row->bubble_fraction = timing_median(&t, PIPELINE, Q_BUBBLE);
        row->bubble_uneven = timing_median(&t, PIPELINE, Q_UNEVEN);
        row->busy_first = timing_median(&t, PIPELINE, Q_BUSY_FIRST);
        row->busy_last = timing_median(&t, PIPELINE, Q_BUSY_LAST);
        row->step_seconds = timing_median(&t, PIPELINE, Q_SECONDS);
        row->accumulate_seconds = timing_median(&t, ONE_PROCESS, Q_SECONDS);
        row->step_ratio = timing_ratio(&t, PIPELINE, ONE_PROCESS, Q_SECONDS);
    }
    timing_free(&t);
    step_pipeline_free(run->pipe);
    run->pipe = NULL;
    return status;
}

/* ---- the sweep ---------------------------------------------------------------------------- */

static RematStatus sweep(Run *run, const GptShape *shape, const TimingPlan *plan, ResultsTable *table)
{
    PipeRow rows[2 * N_M];
    RematStatus status = REMAT_OK;
    const int P = run->g->size;
    results_print_head(table, 0);
    for (int i = 0; i < 2 * N_M && status == REMAT_OK; i++) {
        const PipeSchedule kind = i < N_M ? PIPE_GPIPE : PIPE_1F1B;
        const int M = run->M = MICRO_BATCHES[i % N_M];
        PipeRow *row = &rows[i];
        *row = (PipeRow){.schedule = PIPE_SCHEDULE_NAMES.names[kind], .stages = P, .micro_batches = M,
                         .bubble_theory = (double)(P - 1) / (M + P - 1),
                         .live_theory = kind == PIPE_GPIPE || M < P ? M : P};
        status = run_pipeline(run, shape, kind, STRATEGY_FULL, NULL, row, &row->peak_act_stage0_full);
        if (status == REMAT_OK) status = run_pipeline(run, shape, kind, STRATEGY_NONE, plan, row, &row->peak_act_stage0);
        if (status == REMAT_OK) results_add_row(table, row);
    }
    if (status != REMAT_OK) return status;
    printf("\n  per step: each stage's busy time (in pipe_run, less its waits), the pipeline's step and one\n"
           "  process accumulating M micro-batches (the last against the first), medians (95%% interval)\n");
    results_print_head(table, 1);
    for (int i = 0; i < 2 * N_M; i++) results_print_row(table, &rows[i], 1);
    return REMAT_OK;
}

static RematStatus measure(const DistGroup *g, const BenchOptions *o, Results *results)
{
    GptShape shape = o->quick ? (GptShape){.L = 2, .C = 16, .H = 2, .T = 8, .B = 2, .dropout = 0.1f}
                              : (GptShape){.L = 8, .C = 128, .H = 4, .T = 64, .B = 4, .dropout = 0.1f};
    if (shape.L < g->size) shape.L = g->size; /* a block at least per stage */
    results_config_gpt(results, &shape);
    /* A fixed number of rounds, the same on every rank: a rank stopping early would leave the
     * others waiting at the next barrier. */
    const TimingPlan plan = timing_plan_fixed(1, o->steps ? o->steps : o->quick ? 6 : 15);
    results_config_plan(results, &plan);
    ResultsTable *table = RESULTS_TABLE(results, "pipeline", "per schedule and M: stage 0's figures, the bubble and "
                                        "the step against one process", COLUMNS);
    const OptimConfig adamw = optim_adamw_defaults(1e-4f);
    ModelBench b;
    RematStatus status = gpt_bench_create(&b, &shape, &adamw);
    MicroBatch mb[8]; /* the largest M; every micro-batch the same batch: a step is measured, not learning */
    for (int i = 0; i < 8; i++) mb[i] = (MicroBatch){b.batch.x, b.batch.y};
    Run run = {.g = g, .one = {.model = b.model, .optim = b.opt}, .mb = mb, .ctx = bench_ctx(1, 2),
               .all = malloc(2 * (size_t)g->size * sizeof(uint64_t))};
    if (status == REMAT_OK && !run.all) status = remat_fail(REMAT_ENOMEM, "bench_pipeline: no memory");
    if (status == REMAT_OK) status = sweep(&run, &shape, &plan, table);
    free(run.all);
    model_bench_free(&b);
    return status;
}

int main(int argc, char **argv)
{
    DistGroup g;
    BenchOptions o;
    Results *results;
    const int start = bench_start_ranks(&info, false, argc, argv, &g, &o, &results);
    if (start != BENCH_RUN) return start;
    const DistFact facts[] = {dist_fact("--quick", "%d", o.quick), dist_fact("--steps", "%d", o.steps),
                              dist_fact("--show-schedule", "%d", show_schedule)};
    RematStatus status = g.size < 2 ? remat_fail(REMAT_EINVAL, "a pipeline's stages are ranks: run it as 2 or more "
                                                 "(mpirun -np 2 build/bench/bench_pipeline)")
                                    : dist_agree(&g, facts, 3, "every rank must be given the same flags");
    for (int i = 0; i < 2 * N_M && status == REMAT_OK && show_schedule; i++)
        status = show_timeline(i < N_M ? PIPE_GPIPE : PIPE_1F1B, g.size, MICRO_BATCHES[i % N_M]);
    if (status == REMAT_OK && !show_schedule) status = measure(&g, &o, results);
    return bench_finish_ranks(&info, &g, &o, results, status, !show_schedule);
}
