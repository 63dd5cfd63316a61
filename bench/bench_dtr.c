/*
 * bench_dtr.c — DTR (checkpoint/dtr.h) measured two ways. On bench_step's GPT and MLP chain
 * (bench/measure.h), under budgets that leave 20%, 40% and 60% of none's activation peak:
 * dtr beside the exact dp planner's schedule for the same budget, each step's ledger peak,
 * recompute FLOPs, evictions and time against none, and the share of dtr's step spent
 * choosing victims. On its paper's own experiment (--unit-chain, alone): DTR's uniform chain
 * at B = ⌈2√n⌉, ⌈√n⌉, ⌈log₂ n⌉, its computes beyond one forward and one backward beside the
 * fewest any schedule can do: exact counts, not times.
 */
#include <math.h>
#include <stdio.h>

#include "bench/measure.h"
#include "checkpoint/dtr.h"
#include "checkpoint/planner.h"

static bool unit_chain;
static unsigned unit_chain_given;
static const Flag UNIT_CHAIN = {.name = "--unit-chain", .type = FLAG_SWITCH, .help = "DTR's uniform chain alone"};

static const BenchInfo INFO = {
    .name = "bench_dtr",
    .question = "DTR's eviction policy against the optimum: on the models, and on its paper's unit-cost chain",
    .about = "  bench_step's GPT and MLP chain with AdamW under budgets that leave 20%, 40%, 60% of none's\n"
             "  activation peak: dtr beside dp's schedule, peak, recompute, evictions, time against none.\n"
             "  DTR on a chain of n unit-cost ops, each tensor a unit of B = ceil(2 sqrt n), ceil(sqrt n),\n"
             "  ceil(log2 n): its computes beyond 2n beside the fewest any schedule can do.",
    .quick = "GPT L=4 C=64 T=32 B=2, MLP N=16 W=64 B=16 (+-5 points or 2 s); n = 10 .. 64",
    .full = "bench_step's GPT and MLP, timed over 7 rounds; n = 10, 20, 32, 50, 64, 100, 128, 200, 256, 500, 512, 1000",
    .timed = true,
    .own = {.flags = &UNIT_CHAIN, .n = 1, .opts = &unit_chain, .accepted = ~0u, .given = &unit_chain_given},
};

/* ---- the models ------------------------------------------------------------------------------ */

static const double ACT_SHARES[] = {0.2, 0.4, 0.6}; /* of none's activation peak a budget leaves */
static const GptShape QUICK_GPT = {.L = 4, .C = 64, .H = 4, .T = 32, .B = 2, .dropout = 0.1f};
static const MlpShape QUICK_MLP = {.N = 16, .W = 64, .B = 16};
enum { N_SHARES = 3, N_VARIANTS = 1 + 2 * N_SHARES, CHOOSE_STEPS = 3 };

/* One record of the models table: dp's schedule or dtr at a budget, and its steps. */
typedef struct ModelRow {
    const char *model, *planner;
    double act_share;
    size_t budget, peak;
    bool fits, dtr;
    uint64_t recompute_flops, evictions, remats;
    double choose_share;
    Estimate step_seconds, time_overhead;
} ModelRow;

static const ResultsColumn MODEL_COLUMNS[] = {
    COLUMN(ModelRow, model, STR, "gpt or mlp: bench_step's", SHOW("model", "", 5, 0)),
    COLUMN(ModelRow, planner, STR, "dtr, or dp: the exact planner's schedule for the budget", SHOW("plan", "", 4, 0)),
    COLUMN(ModelRow, act_share, DOUBLE, "of none's activation peak the budget leaves", SHOW("ACT left", "", 8, 1)),
    COLUMN(ModelRow, budget, SIZE, "bytes: none's peak less the rest of its activation peak",
           SHOW("budget", "MiB", 8, 2)),
    COLUMN(ModelRow, fits, BOOL, "false: out of memory at this budget (dtr: or it thrashed)", SHOW("fits", "", 5, 0)),
    COLUMN(ModelRow, peak, SIZE, "bytes: the ledger's peak of the step, every kind", WHEN(ModelRow, fits),
           SHOW("peak", "MiB", 8, 2)),
    COLUMN(ModelRow, recompute_flops, U64, "FLOPs (the ledger's)", WHEN(ModelRow, fits),
           SHOW("recompute", "GFLOP", 10, 3)),
    COLUMN(ModelRow, evictions, U64, "dtr: tensors evicted in one step", WHEN(ModelRow, dtr),
           SHOW("evicted", "", 8, 0)),
    COLUMN(ModelRow, remats, U64, "dtr: tensors rematerialised in one step", WHEN(ModelRow, dtr),
           SHOW("remat", "", 6, 0)),
    COLUMN(ModelRow, choose_share, DOUBLE, "dtr: of its step's time, scoring and choosing victims (3 steps)",
           WHEN(ModelRow, dtr), SHOW("choosing", "%", 8, 3)),
    COLUMN_TIMED(ModelRow, step_seconds, "seconds"),
    COLUMN_TIMED(ModelRow, time_overhead, "ratio", SHOW("time against none (95% interval, rounds)", "+%", 28, 1)),
    COLUMN_SAMPLES,
};

/* A model's variants: none first, then each that fits, and the record of each try. */
typedef struct ModelRun {
    const char *name;
    ModelBench g;
    int n;
    Variant variants[N_VARIANTS]; /* their schedules are the run's, freed with it */
    int variant_of[N_VARIANTS - 1]; /* by record: its variant, or -1 */
    ModelRow rows[N_VARIANTS - 1];
} ModelRun;

/* CHOOSE_STEPS steps of dtr's schedule `s` under the ledger's budget `budget`; false when it
 * does not fit there (out of memory, or thrashing past its bound), said in a line. Its record
 * gets what the runtime did per step and the share of the steps spent choosing victims. */
static bool dtr_fits(ModelRun *m, Schedule *s, size_t budget, ModelRow *row, RematStatus *status)
{
    const Variant v = {.name = row->planner, .schedule = s, .budget = budget};
    TrainCtx ctx = bench_ctx(5, 5);
    const DtrStats before = dtr_stats();
    double seconds = 0;
    for (int i = 0; i < CHOOSE_STEPS && *status == REMAT_OK; i++) {
        StepStats st;
        *status = step_measure(&m->g, &v, &ctx, &st);
        seconds += *status == REMAT_OK ? st.seconds : 0;
    }
    const DtrStats after = dtr_stats();
    row->evictions = (uint64_t)(after.evictions - before.evictions) / CHOOSE_STEPS;
    row->remats = (uint64_t)(after.remats - before.remats) / CHOOSE_STEPS;
    row->choose_share = (after.choose_seconds - before.choose_seconds) / seconds;
    if (*status != REMAT_EOOM && *status != REMAT_ESTATE) return *status == REMAT_OK;
    printf("  %s, %s at %.2f MiB: %s\n", m->name, row->planner, mib(budget), remat_last_error());
    remat_clear_error();
    *status = REMAT_OK;
    row->dtr = false;
    return false;
}

/* Plans dp and dtr at each budget, from none's step: its peak less (1 - share) of its
 * activation peak; adds the variants that fit. */
static RematStatus models_plan(ModelRun *m)
{
    const Strategy none = strategy_defaults(STRATEGY_NONE), dtr = strategy_defaults(STRATEGY_DTR);
    const int layers = m->g.model->n_layers;
    TrainCtx ctx = bench_ctx(5, 5);
    ChainCost *cost = model_profile(m->g.model, m->g.batch.x, m->g.batch.y, &ctx, NULL, PLANNER_DP);
    StepStats st;
    m->variants[m->n++] = (Variant){.name = "none", .schedule = schedule_for_strategy(&none, layers)};
    RematStatus status =
        cost && m->variants[0].schedule ? step_measure(&m->g, &m->variants[0], &ctx, &st) : remat_last_status();
    for (int r = 0; r < 2 * N_SHARES && status == REMAT_OK; r++) {
        const double share = ACT_SHARES[r / 2];
        ModelRow *row = &m->rows[r];
        *row = (ModelRow){.model = m->name, .planner = r % 2 ? "dtr" : "dp", .act_share = share, .dtr = r % 2,
                          .budget = st.peak_resident - (size_t)((1 - share) * (double)st.peak[MEM_ACT])};
        Schedule *s = r % 2 ? schedule_for_strategy(&dtr, layers) : planner_plan(PLANNER_DP, cost, row->budget);
        if (!s && (r % 2 || remat_last_status() != REMAT_EOOM)) status = remat_last_status();
        if (!s && status == REMAT_OK) printf("  %s, dp: %s\n", m->name, remat_last_error());
        row->fits = s && (!row->dtr || dtr_fits(m, s, row->budget, row, &status)); /* dp's planned to fit */
        m->variant_of[r] = row->fits ? m->n : -1;
        if (!row->fits) schedule_free(s);
        else m->variants[m->n++] = (Variant){.name = row->planner, .schedule = s, .budget = row->dtr ? row->budget : 0};
        if (status == REMAT_OK) remat_clear_error(); /* a failure keeps its message for the caller */
    }
    chain_cost_free(cost);
    return status;
}

/* The model's variants stepped in interleaved rounds, none the baseline; each record gets its
 * last step's bytes and FLOPs and its times. A step over its budget is a bug. */
static RematStatus models_measure(ModelRun *m, const TimingPlan *plan, ResultsTable *table)
{
    TrainCtx ctx = bench_ctx(5, 5);
    StepStats stats[N_VARIANTS];
    Timing timing = {0};
    RematStatus status = steps_alternate(&m->g, m->variants, m->n, NULL, &ctx, plan, NULL, m->name, stats, &timing);
    for (int r = 0; r < 2 * N_SHARES && status == REMAT_OK; r++) {
        ModelRow *row = &m->rows[r];
        const int i = m->variant_of[r];
        if (i >= 0) {
            row->peak = stats[i].peak_resident;
            row->recompute_flops = stats[i].flops[PHASE_RECOMPUTE];
            row->step_seconds = timing_median(&timing, i, STEP_SECONDS);
            row->time_overhead = timing_ratio(&timing, i, 0, STEP_SECONDS);
        }
        if (i >= 0 && row->peak > row->budget)
            status = remat_fail(REMAT_ESTATE, "%s, %s: the step's peak, %zu bytes, is over its budget, %zu bytes: a "
                                "bug", m->name, row->planner, row->peak, row->budget);
        else
            results_add_row(table, row);
    }
    timing_free(&timing);
    return status;
}

/* The models table: the GPT, then the MLP chain. */
static RematStatus models(const BenchOptions *o, Results *results)
{
    ResultsTable *table =
        RESULTS_TABLE(results, "models", "dtr and dp at budgets of bench_step's models", MODEL_COLUMNS);
    const OptimConfig adamw = optim_adamw_defaults(1e-4f);
    const GptShape *gpt = o->quick ? &QUICK_GPT : &STEP_GPT;
    const MlpShape *mlp = o->quick ? &QUICK_MLP : &STEP_MLP;
    results_config_gpt(results, gpt);
    results_config_num(results, "mlp_blocks", mlp->N);
    results_config_num(results, "mlp_width", mlp->W);
    results_config_num(results, "mlp_batch", mlp->B);
    const TimingPlan plan = bench_timing_plan(o, results, 1, 7, 2.0);
    results_print_head(table, 0);
    RematStatus status = REMAT_OK;
    for (int k = 0; k < 2 && status == REMAT_OK; k++) {
        ModelRun m = {.name = k ? "mlp" : "gpt"};
        status = k ? mlp_bench_create(&m.g, mlp, NULL, &adamw) : gpt_bench_create(&m.g, gpt, &adamw);
        if (status == REMAT_OK) status = models_plan(&m);
        if (status == REMAT_OK) status = models_measure(&m, &plan, table);
        for (int i = 0; i < m.n; i++) schedule_free(m.variants[i].schedule);
        model_bench_free(&m.g);
    }
    return status;
}

/* ---- the unit chain ------------------------------------------------------------------------ */

typedef struct ChainRow {
    int n, budget;
    const char *budget_rule, *heuristic;
    int64_t dtr_extra_computes, optimal_extra_computes;
} ChainRow;

static const ResultsColumn COLUMNS[] = {
    COLUMN(ChainRow, n, INT, "ops", SHOW("n", "", 5, 0)),
    COLUMN(ChainRow, budget_rule, STR, "", SHOW("rule", "", 10, 0)),
    COLUMN(ChainRow, budget, INT, "units", SHOW("B", "", 4, 0)),
    COLUMN(ChainRow, dtr_extra_computes, U64, "ops", SHOW("DTR extra", "", 10, 0)),
    COLUMN(ChainRow, optimal_extra_computes, U64, "ops", SHOW("optimum", "", 8, 0)),
    COLUMN(ChainRow, heuristic, STR, ""),
};

static const int NS[] = {10, 20, 32, 50, 64, 100, 128, 200, 256, 500, 512, 1000};

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    RematStatus status = unit_chain ? REMAT_OK : models(o, results);
    if (status != REMAT_OK) return status;
    const int count = o->quick ? 5 : (int)(sizeof NS / sizeof NS[0]);
    results_config_ints(results, "n", NS, count);
    ResultsTable *table = RESULTS_TABLE(results, "unit_chain", "extra computes of DTR and of the optimum", COLUMNS);
    results_print_head(table, 0);
    for (int i = 0; i < count * 3 && status == REMAT_OK; i++) {
        const double n = NS[i / 3], budget[3] = {ceil(2 * sqrt(n)), ceil(sqrt(n)), ceil(log2(n))};
        ChainRow row = {.n = NS[i / 3], .budget = (int)budget[i % 3], .heuristic = "h_DTR = c(e*)/(m*s)",
                        .budget_rule = (const char *[]){"2sqrt(n)", "sqrt(n)", "log2(n)"}[i % 3]};
        status = dtr_chain_extra(row.n, row.budget, &row.dtr_extra_computes);
        if (status == REMAT_OK) status = dtr_chain_optimum(row.n, row.budget, &row.optimal_extra_computes);
        if (status == REMAT_OK) results_add_row(table, &row);
    }
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
