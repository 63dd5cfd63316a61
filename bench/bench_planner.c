/*
 * bench_planner.c — budget-driven checkpoint planning: for a memory budget, how much
 * recomputation does each planner pay, and how far is the heuristic from the optimum?
 *
 * For three chains — the MLP chain (uniform), the GPT (whose embedding and head make the
 * chain's ends heterogeneous) and the same GPT with blocks of varying head counts (each
 * block's attention keeps B·H·T² floats, so its memory varies several-fold from block to
 * block while its FLOPs barely do) — it measures the chain cost model with one profiling step, then sweeps
 * the budget from the smallest feasible (params + grads + AdamW state + the leanest
 * schedule's activations) to what none needs. At each budget it asks the exact dynamic
 * program and Chen et al.'s search for a schedule — and, on the uniform chains (the MLP,
 * the GPT of identical blocks), planner revolve — and runs one AdamW step under it with
 * the ledger's budget set to that budget: predicted and measured peak memory and
 * RECOMPUTE FLOPs side by side. none, full and sqrt are points at their own memory.
 * The summary gives each planner's recompute FLOPs relative to the optimum over
 * single-level schedules at the same budget: the geometric mean over the budgets where
 * both found a schedule and the optimum recomputes something, and how many budgets that
 * leaves out. Revolve is not single-level — it recomputes layers more than once — so its
 * ratio may fall below 1, and its curve goes on below the DP's smallest feasible budget:
 * those budgets are swept separately (points with dp and chen not found) and counted in
 * its summary row.
 *
 * What it is not: a timing bench. Bytes and FLOPs are exact and repeat run after run.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/cli.h"
#include "bench/measure.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "checkpoint/planner.h"
#include "bench/results.h"

static const BenchInfo INFO = {
    .name = "bench_planner",
    .question = "for a memory budget, the cheapest checkpoint schedule: how far are Chen's search, sqrt "
                "and full from the exact optimum?",
    .about = "  The MLP chain, the GPT and a GPT of varying head counts: budgets from the smallest feasible to store-all; at each,\n"
             "  the exact DP's and Chen et al. 2016's schedules, and Revolve's on the uniform chains, each run\n"
             "  for one AdamW step under the ledger's budget (predicted against measured peak memory and\n"
             "  RECOMPUTE FLOPs); Revolve also below the DP's smallest budget; none, full and sqrt as\n"
             "  points; each planner's recompute FLOPs relative to the single-level optimum.",
    .quick = "MLP N = 16, W = 64, B = 16; GPTs L = 6, C = 64, T = 32, B = 2; 12 budgets, 3 below the DP's (seconds)",
    .full = "MLP N = 32, W = 256, B = 32; GPTs L = 12, C = 128, T = 128, B = 4; 24 budgets, 6 below the DP's",
    .timed = false,
};

typedef struct Chain {
    const char *name; /* "mlp" or "gpt" */
    Model *model;
    MlpTask *task;
    Batch batch;
    Optimizer *opt;
    ChainCost *cost;
} Chain;

static const ResultsField POINT_FIELDS[] = {
    {"model", "mlp, gpt, or gpt_heads (blocks of varying head counts)"},
    {"planner", "dp, chen, revolve, or a fixed strategy: none, full, sqrt"}, {"budget", "bytes"},
    {"found", "a schedule fits the budget"}, {"segments", "segments"}, {"regions", "segments"},
    {"slots", "Revolve's slots (revolve schedules only; store-all has none)"},
    {"below_dp_minimum", "the budget is below the DP's smallest feasible one"}, {"predicted_peak_act", "bytes"},
    {"measured_peak_act", "bytes"}, {"predicted_peak_total", "bytes"}, {"measured_peak_resident", "bytes"},
    {"recompute_flops", "FLOPs (predicted)"}, {"measured_recompute_flops", "FLOPs"},
    {"recompute_share", "RECOMPUTE / FORWARD FLOPs of the step"},
    {"ratio_to_dp", "recompute FLOPs / the single-level optimum's at this budget (0/0 = 1; absent when undefined)"},
};

static const ResultsField SUMMARY_FIELDS[] = {
    {"model", ""}, {"planner", ""}, {"budgets", "budgets tried"}, {"found", "budgets with a schedule"},
    {"compared", "budgets in the mean: both found one, and the optimum's cost is > 0 or both are 0"},
    {"geomean_ratio_to_dp", "ratio"}, {"worst_ratio_to_dp", "ratio"}, {"best_ratio_to_dp", "ratio"},
    {"zero_optimum_nonzero", "budgets where the optimum recomputes nothing and this planner does"},
    {"min_budget", "bytes (this planner's smallest feasible budget)"}, {"none_budget", "bytes"},
    {"uniform", "revolve: the chain's layers all cost the same (else it plans nothing)"},
    {"below_dp_budgets", "revolve: budgets tried below the DP's smallest feasible one"},
    {"below_dp_found", "revolve: of those, budgets where it found a schedule"},
};

/* ---- the chains --------------------------------------------------------------------------- */

static void chain_free(Chain *c)
{
    chain_cost_free(c->cost);
    optim_free(c->opt);
    batch_free(&c->batch);
    mlp_task_free(c->task);
    model_free(c->model);
}

/* The optimizer and the profile, once the model and its batch exist. */
static RematStatus chain_finish(Chain *c)
{
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);
    c->opt = optim_create(&adamw, c->model->params, c->model->n_params);
    if (!c->opt) return remat_last_status();
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 5, 5);
    c->cost = model_profile(c->model, c->batch.x, c->batch.y, &ctx);
    return c->cost ? REMAT_OK : remat_last_status();
}

static RematStatus mlp_chain(Chain *c, int N, int W, int B)
{
    *c = (Chain){.name = "mlp"};
    c->model = mlp_create(&(MlpConfig){.n_layers = N, .width = W, .seed = 1});
    c->task = c->model ? mlp_task_create(W, 2) : NULL;
    if (!c->task) return remat_last_status();
    Pcg32 data;
    pcg32_seed(&data, 2, 3);
    const RematStatus status = mlp_task_batch(c->task, &data, B, &c->batch.x, &c->batch.y);
    return status == REMAT_OK ? chain_finish(c) : status;
}

/* Gives block i of the GPT `heads[i]` heads (new blocks, drawn from their own generator),
 * keeping its embeddings and final LayerNorm, which the parameter list holds first (wte,
 * wpe) and last (ln_f weight and bias). */
static RematStatus vary_heads(Model *m, const GptShape *s, const int *heads)
{
    const Param extra[2] = {m->params[0], m->params[1]};
    const Param tail[2] = {m->params[m->n_params - 2], m->params[m->n_params - 1]};
    Pcg32 init;
    pcg32_seed(&init, 7, 1);
    for (int i = 0; i < m->n_layers; i++) {
        Layer *block = gpt_block_create(m->layers[i]->name, i, s->C, heads[i], s->dropout, ATTENTION_NAIVE, s->L, &init);
        if (!block) return remat_last_status();
        layer_free(m->layers[i]);
        m->layers[i] = block;
    }
    return model_collect_params(m, extra, 2, tail, 2);
}

/* The GPT of shape `s`; with `heads`, its blocks get those head counts. */
static RematStatus gpt_chain(Chain *c, const char *name, const GptShape *s, const int *heads)
{
    *c = (Chain){.name = name};
    ModelBench g;
    RematStatus status = gpt_bench_create(&g, s, NULL);
    c->model = g.model;
    c->batch = g.batch;
    if (status == REMAT_OK && heads) status = vary_heads(c->model, s, heads);
    return status == REMAT_OK ? chain_finish(c) : status;
}

/* ---- one point ---------------------------------------------------------------------------- */

typedef struct Point {
    const char *planner;
    size_t budget;
    bool below_dp; /* the budget is below the DP's smallest feasible one */
    const Schedule *s; /* NULL: nothing found */
    StepStats measured;
    double ratio; /* to the optimum's FLOPs at the same budget; NAN when undefined */
} Point;

/* One AdamW step under schedule `s` with the ledger's budget set to `budget`. */
static RematStatus run_schedule(Chain *c, const Schedule *s, size_t budget, StepStats *stats)
{
    const Variant v = {.name = "planned", .schedule = s};
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 5, 5);
    mem_set_budget(budget);
    const RematStatus status = step_measure(c->model, &v, c->opt, &c->batch, &ctx, stats);
    mem_set_budget(0);
    return status;
}

static double ratio_of(uint64_t flops, uint64_t optimum)
{
    if (optimum == 0) return flops == 0 ? 1.0 : NAN;
    return (double)flops / (double)optimum;
}

static void record_point(ResultsTable *t, const Chain *c, const Point *p)
{
    ResultsRecord *rec = results_record(t);
    record_str(rec, "model", c->name);
    record_str(rec, "planner", p->planner);
    record_num(rec, "budget", (double)p->budget);
    record_bool(rec, "found", p->s != NULL);
    record_bool(rec, "below_dp_minimum", p->below_dp);
    if (!p->s) return;
    record_num(rec, "segments", p->s->n_segments);
    record_num(rec, "regions", schedule_regions(p->s));
    if (schedule_revolve_slots(p->s)) record_num(rec, "slots", schedule_revolve_slots(p->s));
    record_num(rec, "predicted_peak_act", (double)p->s->predicted.peak_act);
    record_num(rec, "measured_peak_act", (double)p->measured.peak[MEM_ACT]);
    record_num(rec, "predicted_peak_total", (double)p->s->predicted.peak_total);
    record_num(rec, "measured_peak_resident", (double)p->measured.peak_resident);
    record_num(rec, "recompute_flops", (double)p->s->predicted.recompute_flops);
    record_num(rec, "measured_recompute_flops", (double)p->measured.flops[PHASE_RECOMPUTE]);
    record_num(rec, "recompute_share", (double)p->s->predicted.recompute_flops / (double)p->measured.flops[PHASE_FORWARD]);
    if (!isnan(p->ratio)) record_num(rec, "ratio_to_dp", p->ratio);
}

static void print_point(const Point *p)
{
    if (!p->s) {
        printf("  %-7s %10.3f %10s\n", p->planner, mib(p->budget), "no schedule");
        return;
    }
    char layout[16];
    if (schedule_revolve_slots(p->s)) snprintf(layout, sizeof layout, "s=%d", schedule_revolve_slots(p->s));
    else snprintf(layout, sizeof layout, "%d/%d", schedule_regions(p->s), p->s->n_segments);
    char ratio[16] = "-"; /* below dp's smallest budget there is no optimum to compare with */
    if (!isnan(p->ratio)) snprintf(ratio, sizeof ratio, "%.3f", p->ratio);
    const Prediction *predicted = &p->s->predicted;
    printf("  %-7s %10.3f %8s %10.3f %10.3f %10.3f %10.3f %11.4f %11.4f %7s\n", p->planner, mib(p->budget), layout,
           mib(predicted->peak_act), mib(p->measured.peak[MEM_ACT]), mib(predicted->peak_total),
           mib(p->measured.peak_resident), 1e-9 * (double)predicted->recompute_flops,
           1e-9 * (double)p->measured.flops[PHASE_RECOMPUTE], ratio);
}

/* ---- the sweep ---------------------------------------------------------------------------- */

typedef struct Tally {
    int budgets, found, compared, zero_optimum;
    int below, below_found; /* budgets below the DP's smallest feasible one, and where a schedule was found */
    double log_sum, worst, best;
} Tally;

static void tally_add(Tally *t, const Point *p, uint64_t optimum)
{
    if (p->below_dp) {
        t->below++;
        t->below_found += p->s != NULL;
        return;
    }
    t->budgets++;
    if (!p->s) return;
    t->found++;
    if (optimum == 0 && p->s->predicted.recompute_flops > 0) t->zero_optimum++;
    if (isnan(p->ratio)) return;
    if (t->compared == 0 || p->ratio < t->best) t->best = p->ratio;
    t->compared++;
    t->log_sum += log(p->ratio);
    if (p->ratio > t->worst) t->worst = p->ratio;
}

static ResultsRecord *record_tally(ResultsTable *t, const Chain *c, const char *planner, const Tally *tally,
                                   size_t lo, size_t hi)
{
    const double geomean = tally->compared ? exp(tally->log_sum / tally->compared) : NAN;
    if (tally->budgets) printf("  %s %-7s: found at %d of %d budgets; recompute FLOPs / optimum: geometric mean %.3f, worst %.3f, "
           "best %.3f over %d; %d budgets where the optimum recomputes nothing and it does\n",
           c->name, planner, tally->found, tally->budgets, geomean, tally->worst, tally->best, tally->compared,
           tally->zero_optimum);
    ResultsRecord *rec = results_record(t);
    record_str(rec, "model", c->name);
    record_str(rec, "planner", planner);
    record_num(rec, "budgets", tally->budgets);
    record_num(rec, "found", tally->found);
    record_num(rec, "compared", tally->compared);
    if (tally->compared) record_num(rec, "geomean_ratio_to_dp", geomean);
    if (tally->compared) record_num(rec, "worst_ratio_to_dp", tally->worst);
    if (tally->compared) record_num(rec, "best_ratio_to_dp", tally->best);
    record_num(rec, "zero_optimum_nonzero", tally->zero_optimum);
    record_num(rec, "min_budget", (double)lo);
    record_num(rec, "none_budget", (double)hi);
    return rec;
}

/* A planner's point at `budget`, run and compared with the optimum's FLOPs there. */
static RematStatus plan_point(Chain *c, PlannerKind kind, size_t budget, uint64_t optimum, Point *p, Schedule **own)
{
    *p = (Point){.planner = planner_name(kind), .budget = budget, .ratio = NAN};
    *own = planner_plan(kind, c->cost, budget);
    if (!*own) return remat_last_status() == REMAT_EOOM ? REMAT_OK : remat_last_status();
    p->s = *own;
    p->ratio = ratio_of((*own)->predicted.recompute_flops, optimum);
    return run_schedule(c, *own, budget, &p->measured);
}

/* What a sweep of one chain holds: its budgets, and a tally per planner (dp, chen, revolve). */
typedef struct Sweep {
    Chain *c;
    size_t lo, hi;   /* the DP's smallest feasible budget, and what none needs */
    int n_planners;  /* 3 on a uniform chain, else 2 (no revolve) */
    Tally tally[3];
    ResultsTable *points;
    Progress *progress;
} Sweep;

static const PlannerKind PLANNERS[3] = {PLANNER_DP, PLANNER_CHEN, PLANNER_REVOLVE};

/* Every planner's point at `budget`: dp first, the others against its FLOPs. Below the
 * DP's smallest budget dp and chen find nothing (recorded so) and Revolve has no ratio. */
static RematStatus sweep_budget(Sweep *w, size_t budget)
{
    Point p[3];
    Schedule *own[3] = {0};
    RematStatus status = REMAT_OK;
    uint64_t optimum = 0;
    for (int k = 0; k < w->n_planners && status == REMAT_OK; k++) {
        status = plan_point(w->c, PLANNERS[k], budget, optimum, &p[k], &own[k]);
        p[k].below_dp = budget < w->lo;
        if (k == 0 && own[0]) {
            optimum = own[0]->predicted.recompute_flops;
            p[0].ratio = 1.0;
        }
    }
    for (int k = 0; k < w->n_planners && status == REMAT_OK; k++) {
        print_point(&p[k]);
        record_point(w->points, w->c, &p[k]);
        tally_add(&w->tally[k], &p[k], optimum);
    }
    for (int k = 0; k < 3; k++) schedule_free(own[k]);
    progress_tick(w->progress, w->c->name);
    return status;
}

/* The fixed strategies at their own memory, against the optimum there. */
static RematStatus sweep_fixed(Sweep *w, ResultsTable *summary)
{
    Chain *c = w->c;
    RematStatus status = REMAT_OK;
    for (int k = 0; k < 3 && status == REMAT_OK; k++) {
        Schedule *fixed = chain_schedule_for_strategy(c->cost, (StrategyKind)k);
        if (!fixed) return remat_last_status();
        Point p = {.planner = strategy_name((StrategyKind)k), .budget = fixed->predicted.peak_total, .s = fixed};
        Schedule *dp = planner_plan(PLANNER_DP, c->cost, p.budget);
        const uint64_t optimum = dp ? dp->predicted.recompute_flops : 0;
        p.ratio = dp ? ratio_of(fixed->predicted.recompute_flops, optimum) : NAN;
        schedule_free(dp);
        status = run_schedule(c, fixed, p.budget, &p.measured);
        if (status == REMAT_OK) {
            print_point(&p);
            record_point(w->points, c, &p);
            Tally one = {0};
            tally_add(&one, &p, optimum);
            record_tally(summary, c, p.planner, &one, w->lo, w->hi);
        }
        schedule_free(fixed);
    }
    return status;
}

/* Budgets from the DP's smallest feasible to store-all; on a uniform chain, Revolve's too,
 * and `n_below` budgets from Revolve's smallest feasible up to the DP's, which only
 * Revolve fits: with one slot it holds x_0, the state it advances and one layer's working
 * set, where a single-level schedule holds its kept inputs and a whole segment. */
static RematStatus sweep(Chain *c, int n_budgets, int n_below, ResultsTable *points, ResultsTable *summary,
                         Progress *progress)
{
    Sweep w = {.c = c, .lo = planner_min_budget(c->cost), .points = points, .progress = progress, .n_planners = 3};
    Schedule *none = chain_schedule_for_strategy(c->cost, STRATEGY_NONE);
    if (!none) return remat_last_status();
    w.hi = none->predicted.peak_total;
    schedule_free(none);
    char not_uniform[320] = "";
    if (chain_check_uniform(c->cost) != REMAT_OK) {
        snprintf(not_uniform, sizeof not_uniform, "%s", remat_last_error());
        remat_clear_error();
        w.n_planners = 2;
    }
    const size_t lo_revolve = w.n_planners == 3 ? planner_revolve_min_budget(c->cost) : 0;
    char revolve[64] = "revolve: not uniform, plans nothing";
    if (w.n_planners == 3) snprintf(revolve, sizeof revolve, "revolve: %.3f MiB", mib(lo_revolve));
    printf("\n  %s: %d layers; smallest feasible budget %.3f MiB (%s), none needs %.3f MiB\n", c->name,
           c->cost->n_layers, mib(w.lo), revolve, mib(w.hi));
    printf("  %-7s %10s %8s %10s %10s %10s %10s %11s %11s %7s\n", "plan", "budget", "regions", "peak ACT",
           "measured", "peak all", "measured", "recompute", "measured", "/ dp");
    printf("  %-7s %10s %8s %10s %10s %10s %10s %11s %11s %7s\n", "", "MiB", "or slots", "predicted", "MiB",
           "predicted", "MiB", "GFLOP", "GFLOP", "");
    RematStatus status = REMAT_OK;
    for (int i = 0; w.n_planners == 3 && lo_revolve < w.lo && i < n_below && status == REMAT_OK; i++)
        status = sweep_budget(&w, lo_revolve + (size_t)((double)(w.lo - lo_revolve) * i / n_below));
    for (int i = 0; i < n_budgets && status == REMAT_OK; i++)
        status = sweep_budget(&w, w.lo + (size_t)((double)(w.hi - w.lo) * i / (n_budgets - 1)));
    if (status == REMAT_OK) status = sweep_fixed(&w, summary);
    for (int k = 0; k < 2 && status == REMAT_OK; k++)
        record_tally(summary, c, planner_name(PLANNERS[k]), &w.tally[k], w.lo, w.hi);
    if (status != REMAT_OK) return status;
    const Tally none_tried = {0};
    ResultsRecord *rec = record_tally(summary, c, "revolve", w.n_planners == 3 ? &w.tally[2] : &none_tried,
                                      w.n_planners == 3 ? lo_revolve : 0, w.hi);
    record_bool(rec, "uniform", w.n_planners == 3);
    record_num(rec, "below_dp_budgets", w.tally[2].below);
    record_num(rec, "below_dp_found", w.tally[2].below_found);
    if (w.n_planners == 3)
        printf("  %s revolve: below the DP's smallest budget, found at %d of %d budgets (from %.3f MiB)\n", c->name,
               w.tally[2].below_found, w.tally[2].below, mib(lo_revolve));
    else
        printf("  %s revolve: not uniform — %s\n", c->name, not_uniform);
    return REMAT_OK;
}

int main(int argc, char **argv)
{
    BenchOptions o;
    Results *results;
    const int start = bench_start(&INFO, argc, argv, &o, &results);
    if (start != BENCH_RUN) return start;

    const int N = o.quick ? 16 : 32, W = o.quick ? 64 : 256, B = o.quick ? 16 : 32;
    const GptShape gpt = o.quick ? (GptShape){.L = 6, .C = 64, .H = 2, .T = 32, .B = 2, .dropout = 0.1f}
                                 : (GptShape){.L = 12, .C = 128, .H = 4, .T = 128, .B = 4, .dropout = 0.1f};
    static const int QUICK_HEADS[] = {16, 1, 2, 8, 1, 4};
    static const int FULL_HEADS[] = {32, 1, 1, 16, 2, 2, 8, 1, 4, 32, 1, 2};
    const int *heads = o.quick ? QUICK_HEADS : FULL_HEADS;
    const int n_budgets = o.quick ? 12 : 24, n_below = o.quick ? 3 : 6;
    results_config_num(results, "mlp_layers", N);
    results_config_num(results, "mlp_width", W);
    results_config_num(results, "mlp_batch", B);
    results_config_gpt(results, &gpt);
    results_config_ints(results, "varied_heads", heads, gpt.L);
    results_config_num(results, "budgets", n_budgets);
    results_config_num(results, "budgets_below_dp", n_below);
    results_config_str(results, "optimizer", "adamw");
    RematStatus status = REMAT_OK;
    ResultsTable *points = results_table(results, "points", "each planner's schedule at each budget, run for one "
                                         "AdamW step under that budget; fixed strategies at their own memory",
                                         POINT_FIELDS, RESULTS_COUNT(POINT_FIELDS), true);
    ResultsTable *summary = results_table(results, "summary", "recompute FLOPs relative to the exact optimum",
                                          SUMMARY_FIELDS, RESULTS_COUNT(SUMMARY_FIELDS),
                                          true);
    Progress progress;
    progress_begin(&progress, stdout, 3 * n_budgets + 2 * n_below, true); /* the GPT of varying heads is not uniform */
    for (int i = 0; i < 3 && status == REMAT_OK; i++) {
        Chain chain = {0};
        status = i == 0 ? mlp_chain(&chain, N, W, B) : gpt_chain(&chain, i == 1 ? "gpt" : "gpt_heads", &gpt,
                                                                 i == 1 ? NULL : heads);
        if (status == REMAT_OK) status = sweep(&chain, n_budgets, n_below, points, summary, &progress);
        chain_free(&chain);
    }
    progress_end(&progress);
    return bench_finish(&INFO, &o, results, status);
}
