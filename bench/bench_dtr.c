/*
 * bench_dtr.c — DTR on its paper's own experiment: --unit-chain runs DTR's uniform chain
 * (checkpoint/dtr.h) at B = ⌈2√n⌉, ⌈√n⌉, ⌈log₂ n⌉, recording its computes beyond one forward
 * and one backward beside the fewest any schedule can do: exact counts, not times.
 */
#include <math.h>

#include "bench/cli.h"
#include "checkpoint/dtr.h"

static bool unit_chain;
static unsigned unit_chain_given;
static const Flag UNIT_CHAIN = {.name = "--unit-chain", .type = FLAG_SWITCH, .help = "DTR's uniform chain (required)"};

static const BenchInfo INFO = {
    .name = "bench_dtr",
    .question = "DTR's eviction policy against the optimum on its paper's unit-cost chain",
    .about = "  DTR on a chain of n unit-cost ops, each tensor a unit of B = ceil(2 sqrt n), ceil(sqrt n),\n"
             "  ceil(log2 n): its computes beyond 2n beside the fewest any schedule can do.",
    .quick = "n = 10, 20, 32, 50, 64",
    .full = "n = 10, 20, 32, 50, 64, 100, 128, 200, 256, 500, 512, 1000",
    .own = {.flags = &UNIT_CHAIN, .n = 1, .opts = &unit_chain, .accepted = ~0u, .given = &unit_chain_given},
};

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

int main(int argc, char **argv)
{
    BenchOptions o;
    Results *results;
    const int start = bench_start(&INFO, argc, argv, &o, &results);
    if (start != BENCH_RUN) return start;
    if (!unit_chain)
        return bench_finish(&INFO, &o, results, remat_fail(REMAT_EINVAL, "give --unit-chain (DTR on the models is "
                                                                         "not measured yet)"));
    const int count = o.quick ? 5 : (int)(sizeof NS / sizeof NS[0]);
    results_config_ints(results, "n", NS, count);
    ResultsTable *table = results_row_table(results, "unit_chain", "extra computes of DTR and of the optimum",
                                            COLUMNS, RESULTS_COUNT(COLUMNS), true);
    results_print_head(table, 0);
    RematStatus status = REMAT_OK;
    for (int i = 0; i < count * 3 && status == REMAT_OK; i++) {
        const double n = NS[i / 3], budget[3] = {ceil(2 * sqrt(n)), ceil(sqrt(n)), ceil(log2(n))};
        ChainRow row = {.n = NS[i / 3], .budget = (int)budget[i % 3], .heuristic = "h_DTR = c(e*)/(m*s)",
                        .budget_rule = (const char *[]){"2sqrt(n)", "sqrt(n)", "log2(n)"}[i % 3]};
        status = dtr_chain_extra(row.n, row.budget, &row.dtr_extra_computes);
        if (status == REMAT_OK) status = dtr_chain_optimum(row.n, row.budget, &row.optimal_extra_computes);
        if (status == REMAT_OK) results_add_row(table, &row);
    }
    return bench_finish(&INFO, &o, results, status);
}
