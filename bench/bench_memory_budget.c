/*
 * bench_memory_budget.c — quiz question 8: checkpointing shrinks activations, but the
 * optimizer's state stays, so a job can still run out of memory however much it recomputes.
 *
 * A job builds the GPT, its batch and its optimizer and runs two training steps (the
 * second is the steady state) under a ledger budget (mem_set_budget), which behaves like a
 * device of that size. Per strategy, with AdamW: the bytes by kind beside the process's as
 * the operating system counts them; whether the job fits a budget between the strategies'
 * peaks; the smallest budget it fits in, found by running the job (an exponential search
 * brackets it, bisection closes it: the ledger is exact, so it is the peak to the byte);
 * that nothing fits at params + grads + optimizer; and what fits there instead: SGD
 * without momentum, which keeps no optimizer state.
 *
 * What it is not: a planner that picks a strategy for a budget (bench_planner runs those).
 */
#include <stdio.h>

#include "base/platform.h"
#include "bench/measure.h"

enum { N_KINDS = 4, JOB_STEPS = 2 };
static const StrategyKind KINDS[N_KINDS] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SQRT, STRATEGY_SELECTIVE};

static const BenchInfo INFO = {
    .name = "bench_memory_budget",
    .question = "quiz question 8: recomputation does not remove optimizer state, so a job can still be out of memory",
    .about = "  The GPT with AdamW under a memory budget, per strategy: bytes by kind, the smallest budget\n"
             "  it fits in; nothing fits at params + grads + optimizer, SGD without momentum does.",
    .quick = "L = 4, D = 128, H = 4, T = 32, B = 4 (a few seconds)",
    .full = "L = 6, D = 256, H = 4, T = 128, B = 4",
    .strategies = KINDS,
    .n_strategies = N_KINDS,
    .step_flags = STEP_FLAG_POLICY | STEP_FLAG_NO_RNG_REPLAY,
    .model_flags = true,
};

/* The GPT every job builds, the command line's model flags it runs with, and the strategies
 * the command line leaves to measure, none first. */
typedef struct JobModel {
    GptShape shape;
    const BenchOptions *options;
    Strategy sweep[N_KINDS];
    int n;
} JobModel;

/* What one job did under a budget. */
typedef struct JobResult {
    RematStatus status;           /* REMAT_OK: it fits */
    char message[512];            /* the OOM message when it did not */
    size_t current[MEM_KIND_COUNT]; /* each kind's bytes at the end of the job */
    size_t peak_act, peak_work, peak_resident;
    ResidentWatch process; /* the process as the operating system counts it, over the job */
} JobResult;

/* Runs the whole job (model, batch, optimizer, JOB_STEPS steps) under `budget` (0: none)
 * and frees it all. Returns REMAT_OK whether or not it fit (r->status says which), or the
 * status of an error that is not the budget's. */
static RematStatus run_job(const JobModel *m, const Strategy *s, OptimKind optim, size_t budget, JobResult *r)
{
    *r = (JobResult){.process = platform_resident_watch_start()};
    mem_reset_peaks();
    mem_set_budget(budget);
    const OptimConfig c = optim == OPTIM_ADAMW ? optim_adamw_defaults(1e-3f) : optim_sgd_defaults(1e-2f, 0.0f);
    ModelBench g;
    RematStatus status = gpt_bench_create(&g, &m->shape, &c);
    Schedule *schedule = status == REMAT_OK ? schedule_for_strategy(s, g.model->n_layers) : NULL;
    if (status == REMAT_OK && !schedule) status = remat_last_status();
    TrainCtx ctx = bench_ctx(3, 4);
    const Variant v =
        bench_variant(m->options, (Variant){.name = name_of(&STRATEGY_NAMES, s->kind), .schedule = schedule}, true);
    StepStats step;
    for (int i = 0; i < JOB_STEPS && status == REMAT_OK; i++)
        status = step_measure(&g, &v, &ctx, &step);
    r->status = status;
    if (status != REMAT_OK) snprintf(r->message, sizeof r->message, "%s", remat_last_error());
    for (int k = 0; k < MEM_KIND_COUNT; k++) r->current[k] = mem_current((MemKind)k);
    r->peak_act = mem_peak(MEM_ACT);
    r->peak_work = mem_peak(MEM_WORK);
    r->peak_resident = mem_peak_moment().resident;
    platform_resident_watch_stop(&r->process);
    schedule_free(schedule);
    model_bench_free(&g);
    mem_set_budget(0);
    if (status != REMAT_OK && status != REMAT_EOOM) return remat_fail(status, "%s", r->message);
    remat_clear_error();
    return REMAT_OK;
}

/* The smallest budget the job fits in. Exponential search from the unconstrained peak
 * brackets it (hi fits, lo does not), bisection closes the bracket; *trials counts the
 * jobs run. */
static RematStatus smallest_budget(const JobModel *m, const Strategy *s, OptimKind optim, size_t peak,
                                   size_t *smallest, int *trials)
{
    JobResult r;
    size_t hi = peak, lo = peak - 1, step = 1;
    RematStatus status = REMAT_OK;
    for (*trials = 1;; hi += step, step *= 2, ++*trials) { /* grow hi until the job fits */
        if ((status = run_job(m, s, optim, hi, &r)) != REMAT_OK) return status;
        if (r.status == REMAT_OK) break;
        lo = hi;
    }
    for (step = 1;; step *= 2) { /* lower lo until the job does not fit */
        if ((status = run_job(m, s, optim, lo, &r)) != REMAT_OK) return status;
        ++*trials;
        if (r.status != REMAT_OK) break;
        hi = lo;
        if (lo == 1) break; /* it fits in one byte: nothing smaller to try */
        lo = lo > step ? lo - step : 1;
    }
    while (hi - lo > 1) { /* lo does not fit (or hi is 1), hi does */
        const size_t mid = lo + (hi - lo) / 2;
        if ((status = run_job(m, s, optim, mid, &r)) != REMAT_OK) return status;
        ++*trials;
        if (r.status == REMAT_OK) hi = mid;
        else lo = mid;
    }
    *smallest = hi;
    return REMAT_OK;
}

/* Everything measured for one optimizer. */
typedef struct OptimRun {
    OptimKind optim;
    JobResult free_run[N_KINDS]; /* without a budget */
    size_t smallest[N_KINDS];
    int trials[N_KINDS];
} OptimRun;

static RematStatus measure_optimizer(const JobModel *m, OptimRun *o, Progress *progress)
{
    const char *optim = o->optim == OPTIM_ADAMW ? "AdamW" : "SGD";
    for (int k = 0; k < m->n; k++) {
        const Strategy *s = &m->sweep[k];
        char label[64];
        snprintf(label, sizeof label, "%s %s", optim, name_of(&STRATEGY_NAMES, s->kind));
        RematStatus status = run_job(m, s, o->optim, 0, &o->free_run[k]);
        if (status == REMAT_OK && o->free_run[k].status != REMAT_OK) /* no budget, yet out of memory */
            status = remat_fail(o->free_run[k].status, "%s", o->free_run[k].message);
        if (status == REMAT_OK)
            status = smallest_budget(m, s, o->optim, o->free_run[k].peak_resident, &o->smallest[k],
                                     &o->trials[k]);
        if (status != REMAT_OK) return status;
        progress_tick(progress, label);
    }
    return REMAT_OK;
}

/* The 1 MiB multiple halfway between the smallest and the largest of the n peaks. */
static size_t demo_budget(const OptimRun *o, int n)
{
    size_t lo = (size_t)-1, hi = 0;
    for (int k = 0; k < n; k++) {
        const size_t p = o->free_run[k].peak_resident;
        lo = p < lo ? p : lo;
        hi = p > hi ? p : hi;
    }
    const size_t MiB = 1024 * 1024, mid = lo + (hi - lo) / 2;
    return mid / MiB * MiB > lo ? mid / MiB * MiB : mid;
}

/* Everything the bench measured: the two optimizers' jobs, and AdamW's at two budgets. */
typedef struct Measured {
    OptimRun adamw, sgd;
    size_t budget; /* between the strategies' peaks */
    size_t pgo;    /* AdamW's params + grads + optimizer state */
    JobResult demo[N_KINDS], at_floor[N_KINDS];
} Measured;

/* One record of the jobs table: one optimizer's job under one strategy; AdamW's with its
 * runs at the two budgets, and the process's memory where the system tells it. */
typedef struct JobRow {
    const char *optimizer, *strategy;
    size_t params, grads, optimizer_state, peak_act, peak_work, peak_resident, smallest_budget;
    int search_trials;
    bool adamw, process_known;
    size_t demo_budget;
    bool fits_demo_budget, fits_at_adamw_floor;
    const char *demo_message, *floor_message;
    size_t process_baseline, process_peak;
    double process_unaccounted, ledger_and_baseline; /* the latter printed only */
} JobRow;

/* Printed as four tables: the breakdown (0), the process (1), the fits under the budget
 * between the peaks (2) and at params + grads + optimizer (3). */
static const ResultsColumn JOB_COLUMNS[] = {
    COLUMN(JobRow, optimizer, STR, ""), COLUMN(JobRow, strategy, STR, "", SHOW_IN(15u, "strategy", "", 10, 0)),
    COLUMN(JobRow, params, SIZE, "bytes", SHOW("params", "MiB", 9, 2)),
    COLUMN(JobRow, grads, SIZE, "bytes", SHOW("grads", "MiB", 9, 2)),
    COLUMN(JobRow, optimizer_state, SIZE, "bytes", SHOW("optimizer", "MiB", 10, 2)),
    COLUMN(JobRow, peak_act, SIZE, "bytes", SHOW("peak ACT", "MiB", 9, 2)), COLUMN(JobRow, peak_work, SIZE, "bytes"),
    COLUMN(JobRow, peak_resident, SIZE, "bytes", SHOW_IN(3u, "peak total", "MiB", 10, 2)),
    COLUMN(JobRow, smallest_budget, SIZE, "bytes", SHOW("smallest budget", "MiB", 16, 2)),
    COLUMN_PRINTED(JobRow, smallest_budget, SIZE, SHOW("", "bytes", 20, 0)),
    COLUMN(JobRow, search_trials, INT, "jobs", SHOW("trials", "", 7, 0)),
    COLUMN(JobRow, demo_budget, SIZE, "bytes", WHEN(JobRow, adamw)),
    COLUMN(JobRow, fits_demo_budget, BOOL, "bool", WHEN(JobRow, adamw), SHOW_IN(4u, "fits", "", 4, 0)),
    COLUMN(JobRow, demo_message, STR, "", WHEN(JobRow, adamw), SHOW_IN(4u, "", "", 0, 0)),
    COLUMN(JobRow, fits_at_adamw_floor, BOOL, "bool", WHEN(JobRow, adamw), SHOW_IN(8u, "fits", "", 4, 0)),
    COLUMN(JobRow, floor_message, STR, "", WHEN(JobRow, adamw), SHOW_IN(8u, "", "", 0, 0)),
    COLUMN(JobRow, process_baseline, SIZE, "bytes", WHEN(JobRow, process_known),
           SHOW_IN(2u, "before job", "MiB", 12, 2)),
    COLUMN_PRINTED(JobRow, ledger_and_baseline, DOUBLE, SHOW_IN(2u, "ledger + before", "MiB", 16, 2)),
    COLUMN(JobRow, process_peak, SIZE, "bytes", WHEN(JobRow, process_known),
           SHOW_IN(2u, "measured peak", "MiB", 14, 2)),
    COLUMN(JobRow, process_unaccounted, DOUBLE, "bytes", WHEN(JobRow, process_known),
           SHOW_IN(2u, "difference", "MiB", 12, 2)),
};

/* What no recomputation can remove, and what SGD needs instead. */
typedef struct FloorRow {
    size_t params, grads, optimizer_state, params_grads_optimizer, sgd_smallest_budget;
    bool any_strategy_fits;
    const char *sgd_strategy;
} FloorRow;

static const ResultsColumn FLOOR_COLUMNS[] = {
    COLUMN(FloorRow, params, SIZE, "bytes"), COLUMN(FloorRow, grads, SIZE, "bytes"),
    COLUMN(FloorRow, optimizer_state, SIZE, "bytes"), COLUMN(FloorRow, params_grads_optimizer, SIZE, "bytes"),
    COLUMN(FloorRow, any_strategy_fits, BOOL, "bool"), COLUMN(FloorRow, sgd_smallest_budget, SIZE, "bytes"),
    COLUMN(FloorRow, sgd_strategy, STR, ""),
};

/* Prints and records one optimizer's jobs: its breakdown, and AdamW's other tables. */
static void report_jobs(const JobModel *model, const Measured *m, const OptimRun *run, const char *title,
                        ResultsTable *jobs)
{
    JobRow rows[N_KINDS];
    printf("\n  %s\n", title);
    results_print_head(jobs, 0);
    for (int k = 0; k < model->n; k++) {
        const JobResult *r = &run->free_run[k];
        const ResidentWatch *w = &r->process;
        rows[k] = (JobRow){.optimizer = run == &m->adamw ? "adamw" : "sgd",
                           .strategy = name_of(&STRATEGY_NAMES, model->sweep[k].kind), .params = r->current[MEM_PARAM],
                           .grads = r->current[MEM_GRAD], .optimizer_state = r->current[MEM_OPTIM],
                           .peak_act = r->peak_act, .peak_work = r->peak_work, .peak_resident = r->peak_resident,
                           .smallest_budget = run->smallest[k], .search_trials = run->trials[k],
                           .adamw = run == &m->adamw, .process_known = w->known, .demo_budget = m->budget,
                           .fits_demo_budget = m->demo[k].status == REMAT_OK,
                           .fits_at_adamw_floor = m->at_floor[k].status == REMAT_OK,
                           .demo_message = m->demo[k].message, .floor_message = m->at_floor[k].message,
                           .process_baseline = w->baseline, .process_peak = w->peak,
                           .process_unaccounted = (double)w->peak - (double)w->baseline - (double)r->peak_resident,
                           .ledger_and_baseline = (double)(w->baseline + r->peak_resident)};
        results_add_row(jobs, &rows[k]);
    }
    if (run != &m->adamw) return;
    printf("  The smallest budget is each job's peak total to the byte: the ledger counts exactly.\n");
    if (rows[0].process_known) printf("  the process as the operating system counts it, over each job:\n");
    else printf("  (the process's resident memory: not known here, /proc/self/status cannot be read)\n");
    for (int panel = rows[0].process_known ? 1 : 2; panel < 4; panel++) {
        if (panel == 2) printf("\n  under a budget of %.2f MiB:\n", mib(m->budget));
        if (panel == 3) printf("\n  at params + grads + optimizer = %.2f MiB (%zu bytes):\n", mib(m->pgo), m->pgo);
        if (panel == 1) results_print_head(jobs, panel);
        for (int k = 0; k < model->n; k++) results_print_row(jobs, &rows[k], panel);
        if (panel == 1)
            printf("  (before job: code, libraries, OpenMP and OpenBLAS; the difference is what no tensor holds:\n"
                   "  freed blocks the allocator keeps and no later block fitted, OpenBLAS's packing buffers, thread\n"
                   "  stacks, the tape's nodes)\n");
    }
}

static void report(const JobModel *model, const Measured *m, Results *results)
{
    ResultsTable *jobs = RESULTS_TABLE(results, "jobs", "one training job per optimizer and strategy", JOB_COLUMNS);
    ResultsTable *floor = RESULTS_TABLE(results, "floor", "what no recomputation can remove", FLOOR_COLUMNS);
    char text[128];
    printf("\n  GPT %s; a job = model + batch + optimizer + %d training steps\n",
           gpt_shape_str(text, sizeof text, &model->shape), JOB_STEPS);
    report_jobs(model, m, &m->adamw, "AdamW (two state tensors per parameter)", jobs);
    const JobResult *base = &m->adamw.free_run[0];
    int best = 0; /* the strategy with which SGD needs the smallest budget */
    for (int k = 1; k < model->n; k++) best = m->sgd.smallest[k] < m->sgd.smallest[best] ? k : best;
    FloorRow row = {.params = base->current[MEM_PARAM], .grads = base->current[MEM_GRAD],
                    .optimizer_state = base->current[MEM_OPTIM], .params_grads_optimizer = m->pgo,
                    .sgd_smallest_budget = m->sgd.smallest[best],
                    .sgd_strategy = name_of(&STRATEGY_NAMES, model->sweep[best].kind)};
    for (int k = 0; k < model->n; k++) row.any_strategy_fits |= m->at_floor[k].status == REMAT_OK;
    printf("  %s Recomputation removes activations only;\n"
           "  params, their grads and AdamW's two moments per parameter stay resident all along.\n",
           row.any_strategy_fits ? "Something fits here." : "Nothing fits here, whatever is recomputed.");
    report_jobs(model, m, &m->sgd, "SGD without momentum (no optimizer state)", jobs);
    printf("  What fits instead: SGD without momentum keeps no optimizer state; with %s it needs\n"
           "  %.2f MiB, %s AdamW's params + grads + optimizer (%.2f MiB). (Keeping the optimizer\n"
           "  state in the offload file would be the other way; it is not built.)\n",
           row.sgd_strategy, mib(row.sgd_smallest_budget), row.sgd_smallest_budget < m->pgo ? "below" : "not below",
           mib(m->pgo));
    results_add_row(floor, &row);
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    JobModel model = {.shape = o->quick ? (GptShape){.L = 4, .C = 128, .H = 4, .T = 32, .B = 4, .dropout = 0.1f}
                                        : (GptShape){.L = 6, .C = 256, .H = 4, .T = 128, .B = 4, .dropout = 0.1f},
                      .options = o};
    model.n = bench_sweep(&INFO, o, NULL, model.sweep);
    results_config_gpt(results, &model.shape);
    results_config_num(results, "steps_per_job", JOB_STEPS);
    Measured m = {.adamw = {.optim = OPTIM_ADAMW}, .sgd = {.optim = OPTIM_SGD}};
    Progress progress;
    progress_begin(&progress, stdout, 4 * model.n);
    RematStatus status = measure_optimizer(&model, &m.adamw, &progress);
    m.budget = demo_budget(&m.adamw, model.n);
    const JobResult *base = &m.adamw.free_run[0];
    m.pgo = base->current[MEM_PARAM] + base->current[MEM_GRAD] + base->current[MEM_OPTIM];
    for (int k = 0; k < model.n && status == REMAT_OK; k++) {
        status = run_job(&model, &model.sweep[k], OPTIM_ADAMW, m.budget, &m.demo[k]);
        if (status == REMAT_OK) status = run_job(&model, &model.sweep[k], OPTIM_ADAMW, m.pgo, &m.at_floor[k]);
        progress_tick(&progress, "AdamW at two budgets");
    }
    if (status == REMAT_OK) status = measure_optimizer(&model, &m.sgd, &progress);
    progress_end(&progress);
    if (status == REMAT_OK) report(&model, &m, results);
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
