/*
 * search.h — the planners' searches, each over the schedules of one family, all judged by
 * the chain cost model's predictions (cost.h). Internal to checkpoint/: planner.c
 * dispatches to them, checks their limits and writes their errors.
 *
 *   search_dp.c       the exact optimum over single-level schedules (a dynamic program)
 *   search_chen.c     Chen et al. 2016's Algorithm 3 with the sqrt(x·y) search of b
 *   search_revolve.c  Revolve over the whole chain, with as many slots as the budget holds
 */
#ifndef REMAT_CHECKPOINT_SEARCH_H
#define REMAT_CHECKPOINT_SEARCH_H

#include "checkpoint/cost.h"

/* The single-level schedule with the fewest RECOMPUTE FLOPs whose predicted peak ACT is at
 * most `act_budget`; NULL with *none_fits set when none fits, or NULL on error. Its work
 * grows as L^3: planner.c bounds L. */
Schedule *search_dp(const ChainCost *c, size_t act_budget, bool *none_fits);

/* The single-level schedule with the least predicted peak ACT; NULL on error. */
Schedule *search_dp_leanest(const ChainCost *c);

/* The cheapest of the schedules Chen et al.'s search of b tries that fits `act_budget`;
 * NULL when none does (no error set), with *leanest the least peak ACT among them. */
Schedule *search_chen(const ChainCost *c, size_t act_budget, size_t *leanest);

/* Of none and the Revolve schedules with 1 … max(1, L−1) slots, the one with the fewest
 * RECOMPUTE FLOPs whose predicted peak ACT is at most `act_budget` (ties: the leaner).
 * *leanest gets the least peak ACT among them (SIZE_MAX when the chain is not uniform).
 * NULL when none fits (no error set) or on error (REMAT_EINVAL for a chain that is not
 * uniform). */
Schedule *search_revolve(const ChainCost *c, size_t act_budget, size_t *leanest);

#endif /* REMAT_CHECKPOINT_SEARCH_H */
