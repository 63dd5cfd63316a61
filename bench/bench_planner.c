/*
 * bench_planner.c — budget-driven checkpoint planning: for a memory budget, how much
 * recomputation does each planner pay, and how far is the heuristic from the optimum?
 *
 * Three chains: the MLP chain (uniform), the GPT (its embedding and head make the ends
 * heterogeneous) and a GPT whose blocks have varying head counts (memory varying several-
 * fold from block to block, FLOPs barely). Each is profiled once (the chain cost model),
 * then swept from the smallest feasible budget to what none needs: at each budget the
 * exact DP, Chen et al.'s search and, on uniform chains, Revolve plan a schedule that runs
 * one AdamW step under that budget, predicted beside measured peak and RECOMPUTE FLOPs.
 * none, full and sqrt are points at their own memory. The summary gives each planner's
 * recompute FLOPs over the single-level optimum's at the same budget. Revolve recomputes
 * layers more than once, so its ratio may fall below 1 and its curve goes on below the
 * DP's smallest budget, swept apart.
 *
 * --pareto adds the frontier of the MLP chain and the GPT, each step timed against none's; it
 * checks that ops never recomputes more than dp. No claim rests on time: bytes and FLOPs are exact.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/platform.h"
#include "bench/measure.h"
#include "checkpoint/planner.h"

static bool pareto;
static unsigned pareto_given;
static const Flag PARETO = {
    .name = "--pareto", .type = FLAG_SWITCH,
    .help = "also the frontier of the MLP and the GPT: ops, dp, chen, revolve and dtr (where a\n"
            "step of it fits) at 6 (quick) or 8 budgets up to none's peak, the presets at their\n"
            "own; each step timed against none (until +-5 points or 1 s; full: 7 rounds)"};

static const BenchInfo INFO = {
    .name = "bench_planner",
    .question = "for a memory budget, the cheapest checkpoint schedule: how far are Chen's search, sqrt "
                "and full from the exact optimum?",
    .about = "  Three chains at budgets up to store-all: the DP's, Chen et al.'s and Revolve's schedules,\n"
             "  each run for one step under its budget, predicted against measured peak and FLOPs.",
    .quick = "MLP N = 16, W = 64, B = 16; GPTs L = 6, C = 64, T = 32, B = 2; 12 budgets, 3 below the DP's (seconds)",
    .full = "MLP N = 32, W = 256, B = 32; GPTs L = 12, C = 128, T = 128, B = 4; 24 budgets, 6 below the DP's",
    .own = {.flags = &PARETO, .n = 1, .opts = &pareto, .accepted = ~0u, .given = &pareto_given},
};

typedef struct Chain {
    const char *name; /* "mlp", "gpt" or "gpt_heads" */
    ModelBench g;     /* the model, its batch and AdamW */
    MlpTask *task;    /* the MLP's teacher, resident as it runs */
    ChainCost *cost;
    double profile_seconds; /* how long measuring the cost took */
} Chain;

/* ---- the chains --------------------------------------------------------------------------- */

static void chain_free(Chain *c)
{
    chain_cost_free(c->cost);
    model_bench_free(&c->g);
    mlp_task_free(c->task);
}

/* The MLP chain of N blocks of width W and a batch of B of its task (s NULL), or the GPT of
 * shape `s`, whose blocks get `heads` head counts when given; then AdamW and the chain's
 * profile for `planner` (model.h: model_profile), in how long said in c->profile_seconds. */
static RematStatus chain_create(Chain *c, const char *name, int N, int W, int B, const GptShape *s, const int *heads,
                                PlannerKind planner)
{
    *c = (Chain){.name = name};
    RematStatus status;
    if (s) status = gpt_bench_create(&c->g, s, NULL);
    else if ((c->task = mlp_task_create(W, 2))) status = mlp_bench_create(&c->g, &(MlpShape){N, W, B}, c->task, NULL);
    else status = remat_last_status();
    if (status == REMAT_OK && heads) status = gpt_set_heads(c->g.model, heads, 7);
    if (status != REMAT_OK) return status;
    const OptimConfig adamw = optim_adamw_defaults(1e-3f); /* over the parameters as they now are */
    c->g.opt = optim_create(&adamw, c->g.model->params, c->g.model->n_params);
    if (!c->g.opt) return remat_last_status();
    TrainCtx ctx = bench_ctx(5, 5);
    const double start = platform_seconds();
    c->cost = model_profile(c->g.model, c->g.batch.x, c->g.batch.y, &ctx, NULL, planner);
    c->profile_seconds = platform_seconds() - start;
    return c->cost ? REMAT_OK : remat_last_status();
}

/* ---- one point ---------------------------------------------------------------------------- */

/* One AdamW step under schedule `s` with the ledger's budget set to `budget`. */
static RematStatus run_schedule(Chain *c, Schedule *s, size_t budget, StepStats *stats)
{
    const Variant v = {.name = "planned", .schedule = s, .budget = budget};
    TrainCtx ctx = bench_ctx(5, 5);
    return step_measure(&c->g, &v, &ctx, stats);
}

static double ratio_of(uint64_t flops, uint64_t optimum)
{
    if (optimum == 0) return flops == 0 ? 1.0 : NAN;
    return (double)flops / (double)optimum;
}

/* One record of the points table: a planner's schedule at a budget, and its step. */
typedef struct PointRow {
    const char *model, *planner;
    size_t budget;
    bool found, has_slots, below_dp_minimum, has_ratio;
    int segments, regions, slots;
    size_t predicted_peak_act, measured_peak_act, predicted_peak_total, measured_peak_resident;
    uint64_t recompute_flops, measured_recompute_flops;
    double recompute_share, ratio_to_dp;
    char layout[16]; /* printed only: regions/segments, or Revolve's slots */
} PointRow;

static const ResultsColumn POINT_COLUMNS[] = {
    COLUMN(PointRow, model, STR, "mlp, gpt, or gpt_heads (blocks of varying head counts)"),
    COLUMN(PointRow, planner, STR, "dp, chen, revolve, or a fixed strategy: none, full, sqrt", SHOW("plan", "", 7, 0)),
    COLUMN(PointRow, budget, SIZE, "bytes", SHOW("budget", "MiB", 10, 3)),
    COLUMN(PointRow, found, BOOL, "a schedule fits the budget"),
    COLUMN(PointRow, segments, INT, "segments", WHEN(PointRow, found)),
    COLUMN(PointRow, regions, INT, "segments", WHEN(PointRow, found)),
    COLUMN(PointRow, slots, INT, "Revolve's slots (revolve schedules only; store-all has none)",
           WHEN(PointRow, has_slots)),
    COLUMN_PRINTED(PointRow, layout, STR_ARRAY, WHEN(PointRow, found), SHOW("regions", "or slots", 8, 0)),
    COLUMN(PointRow, below_dp_minimum, BOOL, "the budget is below the DP's smallest feasible one"),
    COLUMN(PointRow, predicted_peak_act, SIZE, "bytes", WHEN(PointRow, found), SHOW("ACT predicted", "MiB", 13, 3)),
    COLUMN(PointRow, measured_peak_act, SIZE, "bytes", WHEN(PointRow, found), SHOW("ACT measured", "MiB", 12, 3)),
    COLUMN(PointRow, predicted_peak_total, SIZE, "bytes", WHEN(PointRow, found), SHOW("all predicted", "MiB", 13, 3)),
    COLUMN(PointRow, measured_peak_resident, SIZE, "bytes", WHEN(PointRow, found),
           SHOW("all measured", "MiB", 12, 3)),
    COLUMN(PointRow, recompute_flops, U64, "FLOPs (predicted)", WHEN(PointRow, found),
           SHOW("recompute pred.", "GFLOP", 15, 4)),
    COLUMN(PointRow, measured_recompute_flops, U64, "FLOPs", WHEN(PointRow, found),
           SHOW("recompute meas.", "GFLOP", 15, 4)),
    COLUMN(PointRow, recompute_share, DOUBLE, "RECOMPUTE / FORWARD FLOPs of the step", WHEN(PointRow, found)),
    COLUMN(PointRow, ratio_to_dp, DOUBLE,
           "recompute FLOPs / the single-level optimum's at this budget (0/0 = 1; absent when undefined)",
           WHEN(PointRow, has_ratio), SHOW("/ dp", "", 7, 3)),
};

/* The row of `planner`'s schedule `s` at `budget` (NULL: none found), with its recompute
 * FLOPs' `ratio` to the optimum's there (NAN: undefined), after one AdamW step under that
 * budget. */
static RematStatus point_run(Chain *c, const char *planner, Schedule *s, size_t budget, double ratio,
                             PointRow *r)
{
    *r = (PointRow){.model = c->name, .planner = planner, .budget = budget, .found = s != NULL,
                    .has_ratio = s && !isnan(ratio), .ratio_to_dp = ratio};
    StepStats st;
    const RematStatus status = s ? run_schedule(c, s, budget, &st) : REMAT_OK;
    if (!s || status != REMAT_OK) return status;
    r->segments = s->n_segments;
    r->regions = schedule_regions(s);
    r->slots = schedule_revolve_slots(s);
    r->has_slots = r->slots > 0;
    if (r->has_slots) snprintf(r->layout, sizeof r->layout, "s=%d", r->slots);
    else snprintf(r->layout, sizeof r->layout, "%d/%d", r->regions, r->segments);
    r->predicted_peak_act = s->predicted.peak_act;
    r->measured_peak_act = st.peak[MEM_ACT];
    r->predicted_peak_total = s->predicted.peak_total;
    r->measured_peak_resident = st.peak_resident;
    r->recompute_flops = s->predicted.recompute_flops;
    r->measured_recompute_flops = st.flops[PHASE_RECOMPUTE];
    r->recompute_share = (double)r->recompute_flops / (double)st.flops[PHASE_FORWARD];
    return REMAT_OK;
}

/* ---- the sweep ---------------------------------------------------------------------------- */

/* One record of the summary table: a planner's tally over a chain's budgets, kept as the
 * sweep goes (tally_add). Revolve's row alone says whether the chain is uniform and what
 * it found below the DP's budgets. */
typedef struct SummaryRow {
    const char *model, *planner;
    int budgets, found, compared;
    bool has_ratio, revolve, uniform;
    double geomean_ratio_to_dp, worst_ratio_to_dp, best_ratio_to_dp;
    int zero_optimum_nonzero;
    size_t min_budget, none_budget;
    int below_dp_budgets, below_dp_found;
    double log_sum; /* of the ratios compared, for the geometric mean */
} SummaryRow;

static const ResultsColumn SUMMARY_COLUMNS[] = {
    COLUMN(SummaryRow, model, STR, ""), COLUMN(SummaryRow, planner, STR, "", SHOW("plan", "", 7, 0)),
    COLUMN(SummaryRow, budgets, INT, "budgets tried", SHOW("budgets", "", 7, 0)),
    COLUMN(SummaryRow, found, INT, "budgets with a schedule", SHOW("found", "", 5, 0)),
    COLUMN(SummaryRow, compared, INT,
           "budgets in the mean: both found one, and the optimum's cost is > 0 or both are 0",
           SHOW("compared", "", 8, 0)),
    COLUMN(SummaryRow, geomean_ratio_to_dp, DOUBLE, "ratio", WHEN(SummaryRow, has_ratio),
           SHOW("geomean", "/ dp", 7, 3)),
    COLUMN(SummaryRow, worst_ratio_to_dp, DOUBLE, "ratio", WHEN(SummaryRow, has_ratio), SHOW("worst", "/ dp", 7, 3)),
    COLUMN(SummaryRow, best_ratio_to_dp, DOUBLE, "ratio", WHEN(SummaryRow, has_ratio), SHOW("best", "/ dp", 7, 3)),
    COLUMN(SummaryRow, zero_optimum_nonzero, INT, "budgets where the optimum recomputes nothing and this planner does",
           SHOW("vs zero optimum", "", 15, 0)),
    COLUMN(SummaryRow, min_budget, SIZE, "bytes (this planner's smallest feasible budget)",
           SHOW("smallest budget", "MiB", 15, 3)),
    COLUMN(SummaryRow, none_budget, SIZE, "bytes"),
    COLUMN(SummaryRow, uniform, BOOL, "revolve: the chain's layers all cost the same (else it plans nothing)",
           WHEN(SummaryRow, revolve)),
    COLUMN(SummaryRow, below_dp_budgets, INT, "revolve: budgets tried below the DP's smallest feasible one",
           WHEN(SummaryRow, revolve), SHOW("below dp's", "budgets", 10, 0)),
    COLUMN(SummaryRow, below_dp_found, INT, "revolve: of those, budgets where it found a schedule",
           WHEN(SummaryRow, revolve), SHOW("found there", "", 11, 0)),
};

static void tally_add(SummaryRow *t, const PointRow *p, uint64_t optimum)
{
    if (p->below_dp_minimum) {
        t->below_dp_budgets++;
        t->below_dp_found += p->found;
        return;
    }
    t->budgets++;
    if (!p->found) return;
    t->found++;
    if (optimum == 0 && p->recompute_flops > 0) t->zero_optimum_nonzero++;
    if (!p->has_ratio) return;
    if (t->compared == 0 || p->ratio_to_dp < t->best_ratio_to_dp) t->best_ratio_to_dp = p->ratio_to_dp;
    t->compared++;
    t->log_sum += log(p->ratio_to_dp);
    if (p->ratio_to_dp > t->worst_ratio_to_dp) t->worst_ratio_to_dp = p->ratio_to_dp;
}

/* What a sweep of one chain holds: its budgets, and a tally per fixed strategy and planner. */
typedef struct Sweep {
    Chain *c;
    size_t lo, hi;   /* the DP's smallest feasible budget, and what none needs */
    int n_planners;  /* 3 on a uniform chain, else 2 (no revolve) */
    SummaryRow tally[6]; /* none, full and sqrt (one budget each), then dp, chen, revolve */
    ResultsTable *points;
    Progress *progress;
} Sweep;

static const PlannerKind PLANNERS[3] = {PLANNER_DP, PLANNER_CHEN, PLANNER_REVOLVE};

/* Every planner's point at `budget`: dp first, the others against its FLOPs. Below the
 * DP's smallest budget dp and chen find nothing (recorded so) and Revolve has no ratio. */
static RematStatus sweep_budget(Sweep *w, size_t budget)
{
    RematStatus status = REMAT_OK;
    uint64_t optimum = 0;
    for (int k = 0; k < w->n_planners && status == REMAT_OK; k++) {
        Schedule *s = planner_plan(PLANNERS[k], w->c->cost, budget);
        if (!s && remat_last_status() != REMAT_EOOM) status = remat_last_status();
        if (k == 0 && s) optimum = s->predicted.recompute_flops;
        const double ratio = s ? ratio_of(s->predicted.recompute_flops, optimum) : NAN; /* dp's own: 1 */
        PointRow row;
        if (status == REMAT_OK) status = point_run(w->c, name_of(&PLANNER_NAMES, PLANNERS[k]), s, budget, ratio, &row);
        schedule_free(s);
        if (status != REMAT_OK) break;
        row.below_dp_minimum = budget < w->lo;
        results_add_row(w->points, &row);
        tally_add(&w->tally[3 + k], &row, optimum);
    }
    progress_tick(w->progress, w->c->name);
    return status;
}

/* The fixed strategies at their own memory, against the optimum there. */
static RematStatus sweep_fixed(Sweep *w)
{
    Chain *c = w->c;
    for (int k = 0; k < 3; k++) {
        Schedule *fixed = chain_schedule_for_strategy(c->cost, (StrategyKind)k);
        if (!fixed) return remat_last_status();
        const size_t budget = fixed->predicted.peak_total;
        Schedule *dp = planner_plan(PLANNER_DP, c->cost, budget);
        const uint64_t optimum = dp ? dp->predicted.recompute_flops : 0;
        const double ratio = dp ? ratio_of(fixed->predicted.recompute_flops, optimum) : NAN;
        schedule_free(dp);
        PointRow row;
        const RematStatus status = point_run(c, name_of(&STRATEGY_NAMES, (StrategyKind)k), fixed, budget, ratio, &row);
        schedule_free(fixed);
        if (status != REMAT_OK) return status;
        results_add_row(w->points, &row);
        tally_add(&w->tally[k], &row, optimum);
    }
    return REMAT_OK;
}

/* The summary of one chain's sweep: the fixed strategies, dp, chen, then revolve, whose
 * row says whether it planned anything (`uniform`) and from which budget. */
static void summarize(Sweep *w, size_t lo_revolve, ResultsTable *summary)
{
    printf("  recompute FLOPs relative to the optimum (geometric mean, worst, best over the budgets compared)\n");
    results_print_head(summary, 0);
    for (int k = 0; k < 6; k++) {
        SummaryRow *row = &w->tally[k];
        row->model = w->c->name;
        row->planner = k < 3 ? name_of(&STRATEGY_NAMES, (StrategyKind)k) : name_of(&PLANNER_NAMES, PLANNERS[k - 3]);
        row->has_ratio = row->compared > 0;
        row->geomean_ratio_to_dp = row->compared ? exp(row->log_sum / row->compared) : NAN;
        row->min_budget = k == 5 ? lo_revolve : w->lo;
        row->none_budget = w->hi;
        row->revolve = k == 5;
        row->uniform = w->n_planners == 3;
        results_add_row(summary, row);
    }
}

/* Budgets from the DP's smallest feasible to store-all; on a uniform chain, Revolve's too,
 * and `n_below` budgets from Revolve's smallest feasible up to the DP's, which only
 * Revolve fits: with one slot it holds x_0, the state it advances and one layer's working
 * set, where a single-level schedule holds its kept inputs and a whole segment. */
static RematStatus sweep(Chain *c, int n_budgets, int n_below, ResultsTable *points, ResultsTable *summary,
                         Progress *progress)
{
    Sweep w = {.c = c, .lo = planner_min_budget(PLANNER_DP, c->cost), .points = points, .progress = progress};
    Schedule *none = chain_schedule_for_strategy(c->cost, STRATEGY_NONE);
    if (!none) return remat_last_status();
    w.hi = none->predicted.peak_total;
    schedule_free(none);
    const bool uniform = chain_check_uniform(c->cost) == REMAT_OK;
    const size_t lo_revolve = uniform ? planner_min_budget(PLANNER_REVOLVE, c->cost) : 0;
    char revolve[400];
    if (uniform) snprintf(revolve, sizeof revolve, "revolve: %.3f MiB", mib(lo_revolve));
    else snprintf(revolve, sizeof revolve, "revolve: not uniform, plans nothing: %s", remat_last_error());
    remat_clear_error(); /* not uniform: said, and no error */
    w.n_planners = uniform ? 3 : 2;
    printf("\n  %s: %d layers; smallest feasible budget %.3f MiB (%s), none needs %.3f MiB\n", c->name,
           c->cost->n_layers, mib(w.lo), revolve, mib(w.hi));
    results_print_head(points, 0);
    RematStatus status = REMAT_OK;
    for (int i = 0; uniform && lo_revolve < w.lo && i < n_below && status == REMAT_OK; i++)
        status = sweep_budget(&w, lo_revolve + (size_t)((double)(w.lo - lo_revolve) * i / n_below));
    for (int i = 0; i < n_budgets && status == REMAT_OK; i++)
        status = sweep_budget(&w, w.lo + (size_t)((double)(w.hi - w.lo) * i / (n_budgets - 1)));
    if (status == REMAT_OK) status = sweep_fixed(&w);
    if (status == REMAT_OK) summarize(&w, lo_revolve, summary);
    return status;
}

/* ---- the frontier (--pareto) ---------------------------------------------------------------- */

/* One record of the frontier: a planner's schedule at a budget of the sweep, or a preset at
 * its own peak, stepped in the same rounds as none (variant 0) and timed against it. */
typedef struct ParetoRow {
    const char *model, *planner;
    bool swept, has_kept, most_below_dp;
    int kept_layers;
    size_t budget, peak;
    uint64_t recompute_flops;
    double recompute_share;
    Estimate step_seconds, time_overhead;
    char kept[360]; /* last: it holds commas */
} ParetoRow;

static const ResultsColumn PARETO_COLUMNS[] = {
    COLUMN(ParetoRow, model, STR, "mlp or gpt"),
    COLUMN(ParetoRow, planner, STR, "ops, dp, chen, revolve, dtr, or a preset at its own peak: none, full, sqrt, "
           "attention_core, dots_saveable", SHOW("plan", "", 14, 0)),
    COLUMN(ParetoRow, budget, SIZE, "bytes (a preset: its own peak)", SHOW("budget", "MiB", 8, 2)),
    COLUMN(ParetoRow, peak, SIZE, "bytes: the ledger's peak of the step, every kind", SHOW("peak", "MiB", 8, 2)),
    COLUMN(ParetoRow, recompute_flops, U64, "FLOPs (the ledger's)", SHOW("recompute", "GFLOP", 10, 4)),
    COLUMN(ParetoRow, recompute_share, DOUBLE, "RECOMPUTE / (FORWARD + BACKWARD) FLOPs", SHOW("FLOP ovh", "%", 8, 1)),
    COLUMN_TIMED(ParetoRow, step_seconds, "seconds"),
    COLUMN_TIMED(ParetoRow, time_overhead, "ratio", SHOW("time against none (95% interval, rounds)", "+%", 28, 1)),
    COLUMN_SAMPLES, COLUMN(ParetoRow, most_below_dp, BOOL, "ops: the budget where it recomputes the most below dp"),
    COLUMN(ParetoRow, kept_layers, INT, "ops: the layers under its commonest keep-set", WHEN(ParetoRow, has_kept),
           SHOW("layers", "", 6, 0)),
    COLUMN(ParetoRow, kept, STR_ARRAY, "ops: the op classes it keeps", WHEN(ParetoRow, has_kept),
           SHOW("keeping", "", 0, 0)),
};

enum { FRONTIER_MAX = 48 }; /* none, 4 planners and dtr at up to 8 budgets, 4 presets */

/* A model's frontier: its variants (none first; their schedules its own), records and last steps. */
typedef struct Frontier {
    Chain *c;
    int n;
    Variant variants[FRONTIER_MAX];
    ParetoRow rows[FRONTIER_MAX];
    StepStats stats[FRONTIER_MAX];
} Frontier;

/* Adds schedule `s` (f owns it) of `planner`, planned for `budget` (`swept`) or a preset's;
 * dtr's steps run under that budget, the ledger's. */
static void frontier_add(Frontier *f, const char *planner, Schedule *s, size_t budget, bool swept)
{
    f->variants[f->n] = (Variant){.name = planner, .schedule = s, .budget = s->strategy == STRATEGY_DTR ? budget : 0};
    f->rows[f->n++] = (ParetoRow){.model = f->c->name, .planner = planner, .swept = swept, .budget = budget};
}

/* Adds dtr at `budget` if one step of it fits there: REMAT_OK either way (out of memory, or
 * thrashing past its bound, said in a line), or its error. */
static RematStatus frontier_try_dtr(Frontier *f, size_t budget)
{
    const Strategy dtr = strategy_defaults(STRATEGY_DTR);
    Schedule *s = schedule_for_strategy(&dtr, f->c->cost->n_layers);
    StepStats stats;
    const RematStatus status = s ? run_schedule(f->c, s, budget, &stats) : remat_last_status();
    if (status == REMAT_OK) frontier_add(f, "dtr", s, budget, true);
    else schedule_free(s);
    if (status != REMAT_EOOM && status != REMAT_ESTATE) return status; /* it fits, or an error */
    printf("  %s, dtr at %.2f MiB: %s\n", f->c->name, mib(budget), remat_last_error());
    return REMAT_OK;
}

/* none, then each planner's schedule at n budgets from the smallest any fits to none's peak,
 * then the presets at their own peaks (the selective ones on the GPT). */
static RematStatus frontier_plan(Frontier *f, int n_budgets)
{
    static const PlannerKind KINDS[] = {PLANNER_OPS, PLANNER_DP, PLANNER_CHEN, PLANNER_REVOLVE};
    static const StrategyKind PRESETS[] = {STRATEGY_FULL, STRATEGY_SQRT, STRATEGY_SELECTIVE, STRATEGY_SELECTIVE};
    static const Policy *const POLICIES[] = {NULL, NULL, &POLICY_ATTENTION_CORE, &POLICY_DOTS_SAVEABLE};
    const ChainCost *cost = f->c->cost;
    Schedule *none = chain_schedule_for_strategy(cost, STRATEGY_NONE);
    if (!none) return remat_last_status();
    frontier_add(f, "none", none, 0, false);
    const bool uniform = chain_check_uniform(cost) == REMAT_OK;
    const size_t lo_ops = planner_min_budget(PLANNER_OPS, cost), lo_revolve = planner_min_budget(PLANNER_REVOLVE, cost);
    const size_t lo = uniform && lo_revolve < lo_ops ? lo_revolve : lo_ops, hi = none->predicted.peak_total;
    for (int i = 0; i < n_budgets; i++) {
        const size_t budget = lo + (size_t)((double)(hi - lo) * i / (n_budgets - 1));
        for (int k = 0; k < (uniform ? 4 : 3); k++) {
            Schedule *s = planner_plan(KINDS[k], cost, budget);
            if (!s && remat_last_status() != REMAT_EOOM) return remat_last_status();
            if (s) frontier_add(f, name_of(&PLANNER_NAMES, KINDS[k]), s, budget, true);
        }
        if (frontier_try_dtr(f, budget) != REMAT_OK) return remat_last_status(); /* dtr plans nothing: one step says */
    }
    remat_clear_error();
    for (int k = 0; k < (strcmp(f->c->name, "gpt") ? 2 : 4); k++) {
        Strategy st = strategy_defaults(PRESETS[k]);
        st.policy = POLICIES[k];
        Schedule *s = schedule_for_strategy(&st, cost->n_layers);
        if (!s) return remat_last_status();
        frontier_add(f, st.policy ? st.policy->name : name_of(&STRATEGY_NAMES, st.kind), s, 0, false);
    }
    return REMAT_OK;
}

/* The keep-set of ops most layers of `s` run (its classes: its name without "keeps "), and how many. */
static void commonest_keep_set(ParetoRow *r, const Schedule *s)
{
    for (int i = 0; i < s->n_segments; i++) {
        const Policy *p = s->segments[i].policy;
        int count = 0;
        for (int k = 0; p && p->user && k < s->n_segments; k++) count += s->segments[k].policy == p;
        if (count > r->kept_layers)
            r->kept_layers = count, snprintf(r->kept, sizeof r->kept, "%s", p->name + strlen("keeps "));
    }
    r->has_kept = r->kept_layers > 0;
}

/* Steps every variant in interleaved rounds, none the baseline, and fills each record: bytes and
 * FLOPs from its last step, times from the rounds. A planned step over its budget is a bug. */
static RematStatus frontier_measure(Frontier *f, const TimingPlan *plan)
{
    TrainCtx ctx = bench_ctx(5, 5);
    Progress progress;
    Timing timing = {0};
    progress_begin(&progress, stdout, timing_max_runs(plan, f->n));
    RematStatus status = steps_alternate(&f->c->g, f->variants, f->n, NULL, &ctx, plan, &progress, f->c->name,
                                         f->stats, &timing);
    progress_end(&progress);
    for (int i = 0; i < f->n && status == REMAT_OK; i++) {
        ParetoRow *r = &f->rows[i];
        r->peak = f->stats[i].peak_resident;
        r->recompute_flops = f->stats[i].flops[PHASE_RECOMPUTE];
        r->recompute_share = flop_overhead(&f->stats[i]);
        r->step_seconds = timing_median(&timing, i, STEP_SECONDS);
        r->time_overhead = timing_ratio(&timing, i, 0, STEP_SECONDS);
        r->budget = r->swept ? r->budget : r->peak;
        commonest_keep_set(r, f->variants[i].schedule);
        if (r->peak > r->budget)
            status = remat_fail(REMAT_ESTATE, "%s, planner %s: the step's peak, %zu bytes, is over its budget, %zu "
                                "bytes: a bug", f->c->name, r->planner, r->peak, r->budget);
    }
    timing_free(&timing);
    return status;
}

/* The claim, checked on every run: at every budget where both fit, ops recomputes no more than
 * dp, whose schedules it searches too (more is a bug: REMAT_ESTATE); where it recomputes less,
 * and both schedules where the gap is widest (marked most_below_dp). */
static RematStatus frontier_claim(Frontier *f)
{
    int both = 0, less = 0, widest = -1, widest_dp = -1;
    for (int ops = 0, dp = 1; dp < f->n; ops++, dp++) { /* frontier_plan adds dp right after ops at a budget */
        if (strcmp(f->rows[ops].planner, "ops") || strcmp(f->rows[dp].planner, "dp")) continue;
        const uint64_t o = f->rows[ops].recompute_flops, d = f->rows[dp].recompute_flops;
        both++;
        if (o > d)
            return remat_fail(REMAT_ESTATE, "%s, budget %zu bytes: ops recomputes %llu FLOPs, more than dp's %llu, "
                              "though it searches every schedule dp does: a bug", f->c->name, f->rows[ops].budget,
                              (unsigned long long)o, (unsigned long long)d);
        less += o < d;
        if (o < d && (widest < 0 || d - o > f->rows[widest_dp].recompute_flops - f->rows[widest].recompute_flops))
            widest = ops, widest_dp = dp;
    }
    printf("\n  %s: ops recomputes no more than dp at all %d budgets where both fit, and less at %d\n", f->c->name,
           both, less);
    if (widest < 0) return REMAT_OK;
    f->rows[widest].most_below_dp = true;
    printf("  the widest gap, at %.2f MiB: ops, then dp\n", mib(f->rows[widest].budget));
    schedule_print(f->variants[widest].schedule, f->c->g.model->layers, stdout);
    schedule_print(f->variants[widest_dp].schedule, f->c->g.model->layers, stdout);
    return REMAT_OK;
}

/* The memory/recompute frontier of chain c (profiled for PLANNER_OPS: how long it took, said),
 * the schedules planned, stepped and timed, the claim checked, the records added to `table`. */
static RematStatus frontier(Chain *c, int n_budgets, const TimingPlan *plan, ResultsTable *table)
{
    Frontier *f = calloc(1, sizeof *f);
    if (!f) return remat_fail(REMAT_ENOMEM, "bench_planner: no memory for the frontier");
    f->c = c;
    printf("\n  %s: the frontier; the chain and op-level models measured in %.2f s\n", c->name, c->profile_seconds);
    RematStatus status = frontier_plan(f, n_budgets);
    if (status == REMAT_OK) status = frontier_measure(f, plan);
    if (status == REMAT_OK) status = frontier_claim(f);
    if (status == REMAT_OK) results_print_head(table, 0);
    for (int i = 0; i < f->n && status == REMAT_OK; i++) results_add_row(table, &f->rows[i]);
    for (int i = 0; i < f->n; i++) schedule_free(f->variants[i].schedule);
    free(f);
    return status;
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    const int N = o->quick ? 16 : 32, W = o->quick ? 64 : 256, B = o->quick ? 16 : 32;
    const GptShape gpt = o->quick ? (GptShape){.L = 6, .C = 64, .H = 2, .T = 32, .B = 2, .dropout = 0.1f}
                                  : (GptShape){.L = 12, .C = 128, .H = 4, .T = 128, .B = 4, .dropout = 0.1f};
    static const int QUICK_HEADS[] = {16, 1, 2, 8, 1, 4};
    static const int FULL_HEADS[] = {32, 1, 1, 16, 2, 2, 8, 1, 4, 32, 1, 2};
    static const char *const NAMES[] = {"mlp", "gpt", "gpt_heads"};
    const int *heads = o->quick ? QUICK_HEADS : FULL_HEADS;
    const int n_budgets = o->quick ? 12 : 24, n_below = o->quick ? 3 : 6, n_frontier = o->quick ? 6 : 8;
    results_config_num(results, "mlp_layers", N);
    results_config_num(results, "mlp_width", W);
    results_config_num(results, "mlp_batch", B);
    results_config_gpt(results, &gpt);
    results_config_ints(results, "varied_heads", heads, gpt.L);
    results_config_num(results, "budgets", n_budgets);
    results_config_num(results, "budgets_below_dp", n_below);
    results_config_str(results, "optimizer", "adamw");
    const TimingPlan plan = bench_timing_plan(o, pareto ? results : NULL, 1, 7, 1.0);
    RematStatus status = REMAT_OK;
    ResultsTable *points = RESULTS_TABLE(results, "points", "each planner's schedule at each budget, run for one "
                                         "AdamW step under that budget; fixed strategies at their own memory",
                                         POINT_COLUMNS);
    ResultsTable *summary = RESULTS_TABLE(results, "summary", "recompute FLOPs relative to the exact optimum",
                                          SUMMARY_COLUMNS);
    ResultsTable *frontier_table = !pareto ? NULL : RESULTS_TABLE(results, "pareto", "the memory/recompute frontier: "
                                   "each planner at each budget, each preset at its own peak, timed against none",
                                   PARETO_COLUMNS);
    Progress progress;
    progress_begin(&progress, stdout, 3 * n_budgets + 2 * n_below); /* the GPT of varying heads is not uniform */
    for (int i = 0; i < (pareto ? 5 : 3) && status == REMAT_OK; i++) { /* the sweeps, then mlp's and gpt's frontiers */
        Chain chain = {0};
        status = chain_create(&chain, NAMES[i % 3], N, W, B, i % 3 ? &gpt : NULL, i == 2 ? heads : NULL,
                              i < 3 ? PLANNER_DP : PLANNER_OPS);
        if (status == REMAT_OK) status = i < 3 ? sweep(&chain, n_budgets, n_below, points, summary, &progress)
                                               : frontier(&chain, n_frontier, &plan, frontier_table);
        if (i == 2) progress_end(&progress); /* before the frontiers print */
        chain_free(&chain);
    }
    progress_end(&progress);
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
