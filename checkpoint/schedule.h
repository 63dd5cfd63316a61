/*
 * schedule.h — what a training step keeps for backward, and the one executor that runs it.
 *
 * A schedule cuts the chain of layers x_0 ─layer 0─▶ x_1 ─ … ─layer L−1─▶ x_L into
 * contiguous segments, each run one of three ways:
 *
 *   plain     its layers keep what their ops save: nothing is recomputed
 *   region    a checkpoint region (checkpoint.h): only its input is kept, and its layers
 *             run again in backward; a selective policy (policy.h) keeps the outputs of
 *             the ops it saves
 *   revolve   Griewank's binomial checkpointing (revolve.h) with `slots` stored states:
 *             layers may be recomputed several times, to fit budgets no region fits
 *   dtr       no plan (dtr.h): everything kept while the ledger's budget allows, evicted
 *             and recomputed by layer replays when it does not; the only segment
 *
 * Every way remat keeps activations is a schedule. The strategies make theirs from the
 * chain's length alone (schedule_for_strategy); the budget planners (planner.h) choose
 * one from a measured cost model; a bench or a test may write its own (every other
 * block a region). schedule_forward runs any of them.
 *
 * How sqrt rounds: segments hold k = ceil(sqrt(N)) layers or fewer; there are
 * s = ceil(N / k) of them, as equal as possible (sizes differ by at most one, the longer
 * ones first). A step keeps s segment inputs and one segment's k layers of activations,
 * s + k in all, which is smallest near k = sqrt(N); rounding k up keeps s ≤ k, so the
 * segment being recomputed, not the stored inputs, bounds the peak. N = 16 gives 4
 * segments of 4; N = 32 gives 6 segments (6,6,5,5,5,5); N = 64 gives 8 of 8.
 *
 * A schedule knows layers by index, not by pointer: it is made once per model and run
 * every step on that model's layers.
 */
#ifndef REMAT_CHECKPOINT_SCHEDULE_H
#define REMAT_CHECKPOINT_SCHEDULE_H

#include "checkpoint/checkpoint.h"

/* ---- strategies: how a schedule is asked for ---------------------------------------------- */

typedef enum StrategyKind {
    STRATEGY_NONE = 0,  /* one plain segment: every activation is kept until backward */
    STRATEGY_FULL,      /* every layer a region: only its input is kept; its forward runs twice */
    STRATEGY_SQRT,      /* regions of about sqrt(N) layers: about sqrt(N) inputs kept, plus one
                           segment's activations while it is recomputed — O(sqrt(N)) memory for
                           one extra forward (Chen et al. 2016; quiz question 4) */
    STRATEGY_SELECTIVE, /* every layer a region whose policy keeps the outputs of expensive ops
                           and recomputes the cheap, memory-heavy ones (quiz question 5) */
    STRATEGY_DTR,       /* no plan: every activation kept while the budget allows, the least
                           valuable evicted and recomputed when needed (Kirisame et al. 2021) */
    STRATEGY_BUDGET,    /* the cheapest schedule that fits a memory budget: made by a planner */
} StrategyKind;

/* A strategy and its options: what schedule_for_strategy turns into a schedule. */
typedef struct Strategy {
    StrategyKind kind;
    const Policy *policy; /* selective only; NULL there means attention_core */
    RegionReplay replay;  /* what the schedule made of it will own (default: the generator replayed) */
} Strategy;

/* The strategy of that kind with default options. */
Strategy strategy_defaults(StrategyKind kind);

/* "none", "full", "sqrt", "selective", "dtr", "budget": the names of StrategyKind's values. */
extern const NameTable STRATEGY_NAMES;


/* ---- schedules --------------------------------------------------------------------------- */

typedef enum SegmentKind { SEGMENT_PLAIN = 0, SEGMENT_REGION, SEGMENT_REVOLVE, SEGMENT_DTR } SegmentKind;

typedef struct Segment {
    int first, count;     /* layers first .. first + count − 1 */
    SegmentKind kind;
    const Policy *policy; /* a region's selective policy; NULL: it keeps nothing inside */
    int slots;            /* revolve: how many states it may store (≥ 1) */
} Segment;

/* What a planner predicted for a schedule from its chain cost model (cost.h). */
typedef struct Prediction {
    bool made;                /* false: not predicted (a strategy's schedule) */
    size_t peak_act;          /* the step's peak ACT */
    size_t peak_total;        /* the step's peak of resident memory, every kind */
    uint64_t recompute_flops; /* the step's RECOMPUTE FLOPs */
    uint64_t forward_flops;   /* the step's FORWARD FLOPs, for "% of the forward" */
    size_t forward_kept;      /* ACT a forward leaves above the batch for its backward, the head's aside */
} Prediction;

typedef struct Schedule {
    StrategyKind strategy;  /* what made it, for messages */
    int n_layers;
    int n_segments;
    Segment *segments;      /* owned, in chain order, covering every layer once */
    RegionReplay replay;    /* how every region replays, read there (default: the generator
                               replayed, no check); Revolve always replays the generator */
    int max_remats;         /* dtr: more rematerialisations of a tensor in a step is an error (dtr.h;
                               0: DTR_MAX_REMATS) */
    Prediction predicted;
} Schedule;

/* A schedule of the `n` segments given (copied), which must cover `n_layers` layers in
 * order, adjacent plain segments merged; made by `strategy`, replaying the generator, no
 * determinism check, not predicted. The caller owns it. NULL on error (REMAT_EINVAL says
 * which segment is wrong). */
Schedule *schedule_create(StrategyKind strategy, const Segment *segments, int n, int n_layers);

/* The schedule `strategy` makes for a chain of `n_layers` (none, full, sqrt,
 * selective or dtr; see the top of this file), with its options. NULL on error: REMAT_EINVAL for
 * budget, which a planner makes (planner.h). */
Schedule *schedule_for_strategy(const Strategy *strategy, int n_layers);

/* How many segments of the schedule are regions. */
int schedule_regions(const Schedule *s);

/* The slots of a schedule that runs the whole chain under Revolve; 0 for any other. */
int schedule_revolve_slots(const Schedule *s);

/* NULL is a no-op. */
void schedule_free(Schedule *s);

/* Runs layers[0 .. n_layers) on x as the schedule says, segment by segment, and returns
 * the last layer's output (a new Var the caller owns; x is borrowed). The layers must
 * outlive the step's backward. NULL on error (REMAT_EINVAL when `n_layers` is not the
 * schedule's). */
Var *schedule_forward(const Schedule *s, Layer **layers, int n_layers, Var *x, TrainCtx *ctx);

/* Prints the schedule: each segment, what it keeps and how often its layers run forward
 * (for a Revolve segment its slots, repetition number and how often each layer is
 * recomputed), and the prediction when there is one. `layers` (may be NULL) give the
 * names. */
void schedule_print(const Schedule *s, Layer **layers, FILE *out);

#endif /* REMAT_CHECKPOINT_SCHEDULE_H */
