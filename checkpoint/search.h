/*
 * search.h — the exact search over single-level schedules, judged by the chain cost
 * model's predictions (cost.h). Internal to checkpoint/: planner.c dispatches to it (and
 * holds the other two searches, Chen's and Revolve's), checks its limit and writes its
 * errors.
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

#endif /* REMAT_CHECKPOINT_SEARCH_H */
