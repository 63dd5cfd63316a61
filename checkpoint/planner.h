/*
 * planner.h — budget-driven checkpoint planning: the cheapest schedule (schedule.h) over
 * a chain of layers that fits a memory budget, by a search over the chain cost model's
 * predictions (cost.h): the exact optimum over single-level schedules (ops: with keep-sets
 * of ops within layers too, ops_plan.h), Chen et al. 2016's, or Revolve on identical
 * layers. A planner is its PlannerKind, its name and its search (planner.c).
 *
 * A budget in bytes bounds the whole step: params + grads + optimizer + the workspace in
 * use + the peak of the kernels' scratch + the predicted peak ACT. Below the leanest
 * schedule's need, every planner fails with REMAT_EOOM and says the smallest feasible
 * budget (quiz question 8's lesson).
 */
#ifndef REMAT_CHECKPOINT_PLANNER_H
#define REMAT_CHECKPOINT_PLANNER_H

#include "checkpoint/cost.h"

typedef enum PlannerKind {
    PLANNER_CHEN = 0, /* Chen et al. 2016, Algorithm 3 with the sqrt(x·y) search of b */
    PLANNER_DP,       /* the exact optimum over single-level schedules */
    PLANNER_REVOLVE,  /* Griewank & Walther's binomial schedules, uniform chains only */
    PLANNER_OPS,      /* dp, with each layer's keep-sets of ops as well (ops_plan.h) */
    PLANNER_COUNT
} PlannerKind;

/* "chen", "dp", "revolve", "ops": the names of PlannerKind's values. */
extern const NameTable PLANNER_NAMES;


/* The cheapest schedule (fewest RECOMPUTE FLOPs) the planner finds whose predicted peak
 * total memory is at most `budget` bytes. The caller owns it. NULL on error:
 * REMAT_EOOM when no schedule fits, with a message stating the smallest feasible budget
 * and what it is made of; for chen, also when its search of b finds none that fits
 * although one exists (the message says so); REMAT_EINVAL for revolve on a chain that is
 * not uniform (chain_check_uniform), for dp and ops on a chain longer than
 * PLANNER_DP_MAX_LAYERS, for ops on a cost without an op-level model, or bad arguments. */
Schedule *planner_plan(PlannerKind kind, const ChainCost *cost, size_t budget);

/* The exact search's limit: its work grows as L^3 (L = 1024 takes seconds). */
#define PLANNER_DP_MAX_LAYERS 1024

/* The smallest budget planner `kind` fits in: fixed + work_peak + the least peak ACT of
 * the schedules it can make (for chen, as for dp: the exact search's). 0 when it plans
 * nothing on this chain (a chain longer than PLANNER_DP_MAX_LAYERS; for revolve, one
 * that is not uniform, with chain_check_uniform's error set). */
size_t planner_min_budget(PlannerKind kind, const ChainCost *cost);

#endif /* REMAT_CHECKPOINT_PLANNER_H */
