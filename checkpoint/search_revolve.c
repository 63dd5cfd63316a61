/*
 * search_revolve.c — Revolve as a budget planner's search: of storing everything and
 * Revolve with 1 … L−1 slots over the whole chain, the one with the fewest RECOMPUTE
 * FLOPs that fits, which is the most slots the budget holds (see search.h, and cost.h's
 * "Revolve over the chain" for the prediction).
 */
#include "checkpoint/search.h"

#include <stdint.h>

Schedule *search_revolve(const ChainCost *cost, size_t act_budget, size_t *leanest)
{
    *leanest = SIZE_MAX;
    if (chain_check_uniform(cost) != REMAT_OK) return NULL;
    const int most = cost->n_layers > 1 ? cost->n_layers - 1 : 1; /* more slots than L − 1 change nothing */
    Schedule *best = chain_schedule_for_strategy(cost, STRATEGY_NONE); /* storing everything: no recomputation */
    if (!best) return NULL;
    best->strategy = STRATEGY_BUDGET; /* chosen by the planner, as every schedule it returns */
    *leanest = best->predicted.peak_act;
    if (best->predicted.peak_act <= act_budget) return best;
    schedule_free(best);
    best = NULL;
    for (int slots = 1; slots <= most; slots++) {
        Schedule *s = chain_schedule_revolve(cost, slots);
        if (!s) {
            schedule_free(best);
            return NULL;
        }
        schedule_keep_best(&best, s, act_budget, leanest);
    }
    return best;
}
