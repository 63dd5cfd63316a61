/*
 * checkpoint.h — activation checkpointing: run part of a forward without keeping its
 * activations, and run it again in backward when they are needed.
 *
 *     y = checkpoint(fn, fn_ctx, x, ctx, &opts);
 *
 * First forward: fn(x) runs with grad mode off, so its ops save nothing; the region keeps
 * only its input x (saved by the region's node, op "checkpoint", tagged TAG_CHECKPOINT_INPUT
 * (autograd.h), through the saved-tensor path, so offload can choose it like any other
 * saved tensor) and the random generator's state at entry. That one node goes on the tape. Its backward:
 *
 *   1. puts the generator back to its state at entry (preserve_rng), so dropout draws the
 *      same masks as the first forward did — quiz question 7;
 *   2. re-runs fn(x) with grad mode on into a sub-tape, counting that work as RECOMPUTE
 *      FLOPs — quiz question 1's "extra computation";
 *   3. backpropagates the gradient it received through the sub-tape, into x and into the
 *      parameters used inside the region;
 *   4. frees the sub-tape and puts the generator back where the rest of training expects.
 *
 * With a selective policy (policy.h), the first forward also keeps the outputs of the ops
 * the policy saves, and the replay uses them instead of recomputing.
 *
 * Regions nest: inside a region's first forward grad mode is off, so an inner region just
 * runs; in the replay it becomes a region of its own on the sub-tape.
 *
 * The TrainCtx passed in must live until the region's backward has run (it is the step's
 * context: its generator is what gets saved and restored).
 */
#ifndef REMAT_CHECKPOINT_H
#define REMAT_CHECKPOINT_H

#include "autograd/layers.h"
#include "checkpoint/policy.h"

/* The function a region runs: its output from x (a new Var the caller owns; x borrowed). */
typedef Var *(*RegionFn)(void *fn_ctx, Var *x, TrainCtx *ctx);

/* How a region replays its forward in backward. A schedule owns one for all its regions
 * (Schedule.replay, schedule.h), set from the command line's --no-rng-replay and
 * --determinism-check. */
typedef struct RegionReplay {
    bool preserve_rng;      /* replay with the generator state of the first forward (default on) */
    bool determinism_check; /* compare the replay's output with the first forward's (default off) */
} RegionReplay;

typedef struct CheckpointOptions {
    const char *name;     /* for messages and the tape ("h.0-h.3"); copied */
    RegionReplay replay;  /* a schedule's region: the schedule's */
    const Policy *policy; /* NULL: keep nothing (full recomputation) */
} CheckpointOptions;

/* preserve_rng on, determinism_check off, no policy, no name. */
CheckpointOptions checkpoint_defaults(void);

/* Runs fn(x) as a checkpoint region (see the top of this file) and returns its output, a
 * new Var the caller owns. With grad mode off it simply returns fn(x). NULL on error.
 * In backward, the region fails with REMAT_ESTATE if determinism_check is on and the
 * replay's output differs from the first forward's: "checkpoint region h.0: the replay
 * computed a different output than the first forward ...". */
Var *checkpoint(RegionFn fn, void *fn_ctx, Var *x, TrainCtx *ctx, const CheckpointOptions *opts);

/* As checkpoint(), with a region that runs layers[0 .. n) one after another
 * (layers_forward): the region a schedule makes of a segment. The layers must outlive the
 * region's backward. NULL on error. */
Var *checkpoint_layers(Layer **layers, int n, Var *x, TrainCtx *ctx, const CheckpointOptions *opts);

#endif /* REMAT_CHECKPOINT_H */
