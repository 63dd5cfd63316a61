/*
 * strategy.h — checkpointing strategies over a sequence of layers, one call for any model.
 *
 *   none       every layer runs normally: all activations are kept until backward.
 *   full       every layer is a checkpoint region: only each layer's input is kept, and
 *              each layer's forward runs twice.
 *   sqrt       contiguous segments of about sqrt(N) layers, each a region: about sqrt(N)
 *              segment inputs are kept, plus one segment's activations while it is
 *              recomputed — O(sqrt(N)) activation memory for one extra forward
 *              (Chen et al. 2016; quiz question 4).
 *   selective  every layer is a region with a policy (policy.h) that keeps the outputs of
 *              expensive ops and recomputes the cheap, memory-heavy ones (quiz question 5).
 *   budget     the segments a planner chose for a memory budget (planner.h): some are
 *              regions, the others run plainly. Made by plan_from_schedule (planner.h)
 *              with plan_create_segments. Planner revolve's plan is one segment of every
 *              layer with revolve_slots set: the chain runs under Revolve (revolve.h).
 *
 * How sqrt rounds: segments hold k = ceil(sqrt(N)) layers or fewer; there are
 * s = ceil(N / k) of them, as equal as possible (sizes differ by at most one, the longer
 * ones first). A step keeps s segment inputs and one segment's k layers of activations,
 * s + k in all, which is smallest near k = sqrt(N); rounding k up keeps s ≤ k, so the
 * segment being recomputed, not the stored inputs, bounds the peak. N = 16 gives 4
 * segments of 4; N = 32 gives 6 segments (6,6,5,5,5,5); N = 64 gives 8 of 8.
 *
 * A plan is made once per model and reused every step: it owns the segment records that
 * regions point to until their backward has run.
 */
#ifndef REMAT_STRATEGY_H
#define REMAT_STRATEGY_H

#include "checkpoint/checkpoint.h"

typedef enum StrategyKind {
    STRATEGY_NONE = 0,
    STRATEGY_FULL,
    STRATEGY_SQRT,
    STRATEGY_SELECTIVE,
    STRATEGY_BUDGET,
} StrategyKind;

typedef struct Strategy {
    StrategyKind kind;
    const Policy *policy;   /* selective only; NULL there means attention_core */
    bool preserve_rng;      /* replay dropout's draws (default on) */
    bool determinism_check; /* compare each replay with its first forward (default off) */
} Strategy;

/* The strategy of that kind with default options. */
Strategy strategy_defaults(StrategyKind kind);

/* "none", "full", "sqrt", "selective", "budget". */
const char *strategy_name(StrategyKind kind);

/* The kind called `name`; REMAT_EINVAL with the list of names otherwise. */
RematStatus strategy_parse(const char *name, StrategyKind *kind);

/* A contiguous run of layers that is run as one region, or plainly. */
typedef struct Segment {
    Layer **layers;
    int count;
    bool region;              /* a checkpoint region (none's segment and a budget plan's plain ones: false) */
    char name[NODE_NAME_LEN]; /* "h.4", or "h.4-h.7" */
} Segment;

typedef struct Plan {
    Strategy strategy;
    int n_segments;
    Segment *segments;
    int revolve_slots; /* > 0: its one segment runs under Revolve with this many slots
                          (revolve_forward: the generator is always replayed, and
                          determinism_check does not apply) */
} Plan;

/* A plan for `n` layers (borrowed: they must outlive the plan). NULL on error, and
 * REMAT_EINVAL for budget, which needs its segments (plan_create_segments). */
Plan *plan_create(const Strategy *strategy, Layer **layers, int n);

/* A plan of `n_segments` segments of counts[i] layers each (covering all `n` layers in
 * order), regions where region[i] is true. NULL on error (REMAT_EINVAL if the counts do
 * not add up to n). */
Plan *plan_create_segments(const Strategy *strategy, Layer **layers, int n, const int *counts,
                           const bool *region, int n_segments);

/* The segment sizes of none, full or sqrt for `n` layers (see the top of this file) into
 * sizes[0 .. n); returns how many. */
int strategy_segment_sizes(StrategyKind kind, int n, int *sizes);
void plan_free(Plan *plan);

/* Runs every layer on x as the plan says — segment by segment, or the whole chain under
 * Revolve when revolve_slots is set; returns the last layer's output (a new Var the
 * caller owns; x is borrowed). NULL on error. */
Var *plan_forward(const Plan *plan, Var *x, TrainCtx *ctx);

#endif /* REMAT_STRATEGY_H */
