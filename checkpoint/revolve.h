/*
 * revolve.h — binomial checkpointing (Griewank & Walther's Revolve) for a chain of layers:
 * the optimal count, the schedule that attains it, and an executor inside remat's autograd
 * (revolve.c). The chain cost model predicts its memory (cost.h).
 *
 * Why binomial checkpointing: single-level segments (sqrt, schedule.h) never hold less
 * than about 2·sqrt(l) layer-sized tensors; below that, some layers must be recomputed
 * more than once. Revolve keeps at most `s` stored states (slots) plus the state being
 * worked on, for any s ≥ 1, recomputes a layer at most r times, r the smallest
 * "repetition number" with C(s + r, s) ≥ l, and among all schedules with s slots does the
 * fewest forward evaluations (Griewank 1992; Griewank & Walther 2000). What that buys on
 * the MLP chain against sqrt: docs/MEASUREMENTS.md, 1.3.
 *
 * The count. Reversing l steps x_0 → x_1 → … → x_l with s slots takes at least
 *
 *     t(l, s) = r·l − C(s + r, s + 1),   r the smallest integer with C(s + r, s) ≥ l,
 *     t(l, s) = l − 1                     when l ≤ s + 1,
 *
 * forward step evaluations (l = 100, s = 10: r = 3, t = 222). Griewank's convention: the
 * reversal starts from x_0 in hand; one of the s slots holds x_0; the first sweep advances
 * to x_{l−1} (not x_l); and the reversal of step i runs step i's forward once more, taped,
 * as part of its reverse step — that evaluation is not counted in t.
 *
 * The count in remat's FLOP ledger. remat's executor must give the loss x_l, so its first
 * forward is Griewank's first sweep (l − 1 evaluations, part of t) plus the last layer: l
 * layer forwards, counted FORWARD. Everything later is RECOMPUTE: the t − (l − 1) advances
 * left, and the l reverse steps, each running its layer with grad on. So
 *
 *     RECOMPUTE layer forwards = t(l, s) − (l − 1) + l = t(l, s) + 1,
 *
 * (t(l, s) + 1)·F FLOPs on a uniform chain of layers of F forward FLOPs (tests/test_revolve.c
 * checks it on the ledger). With s ≥ l − 1 that is l·F: every layer once, as strategy full.
 *
 * The schedule (revolve_schedule_create) is a list of actions — advance k steps, store the
 * current state in a slot, restore one, reverse one step — made by the binomial recursion
 * with the largest optimal split (revolve.c). The executor (revolve_forward) runs a chain
 * of layers as one tape node, like a checkpoint region (checkpoint.h): its forward runs the
 * actions up to the first reversal with grad off, storing each checkpoint and the
 * generator's state with it through the saved-tensor path; its backward runs the rest.
 * Dropout draws the first forward's masks, so gradients are bit-identical to running the
 * layers plainly.
 */
#ifndef REMAT_REVOLVE_H
#define REMAT_REVOLVE_H

#include "autograd/layers.h"

/* ---- the count ------------------------------------------------------------------------ */

/* Griewank's minimal number of forward step evaluations t(l, s) for reversing l steps
 * with s slots (the convention above), into *t, and the repetition number r into *r (r may
 * be NULL; r = 0 when l = 1, 1 when 2 ≤ l ≤ s + 1). REMAT_EINVAL, with *t and *r unchanged,
 * when l < 1, s < 1 or t(l, s) does not fit in 64 bits. */
RematStatus revolve_forward_count(int64_t l, int64_t s, int64_t *t, int64_t *r);

/* ---- the schedule --------------------------------------------------------------------- */

typedef enum RevolveActionKind {
    REVOLVE_ADVANCE, /* run `steps` layers from x_position, grad off: the state becomes x_{position+steps} */
    REVOLVE_STORE,   /* keep the current state x_position in `slot` */
    REVOLVE_RESTORE, /* make x_position, kept in `slot`, the current state */
    REVOLVE_REVERSE, /* reverse step position + 1 (layer `position`) from the current x_position */
} RevolveActionKind;

typedef struct RevolveAction {
    RevolveActionKind kind;
    int position; /* the state the action starts from (see the kinds) */
    int steps;    /* ADVANCE: how many layers */
    int slot;     /* STORE, RESTORE: 0 … slots − 1 */
    bool release; /* RESTORE: the slot's last use; its state leaves the slot */
} RevolveAction;

typedef struct RevolveSchedule {
    int steps;              /* l, the chain's length */
    int slots;              /* s, as asked */
    int slots_used;         /* how many the schedule uses: min(s, l − 1) */
    int repetitions;        /* r: no layer is advanced over more than r times */
    int64_t forward_count;  /* the advances' steps summed: t(l, s), Griewank's count */
    int n_actions;
    RevolveAction *actions; /* owned */
    int first_reverse;      /* the actions before it are the executor's first forward */
    int *recomputed;        /* owned, l entries: how many times the executor recomputes layer j
                               (advances after the first sweep, and its reverse step); they
                               sum to t(l, s) + 1 */
} RevolveSchedule;

/* The binomial schedule for l steps and s slots (l, s ≥ 1). The caller owns it and frees
 * it with revolve_schedule_free. NULL with REMAT_EINVAL (l < 1, s < 1) or REMAT_ENOMEM. */
RevolveSchedule *revolve_schedule_create(int l, int s);

/* NULL is a no-op. */
void revolve_schedule_free(RevolveSchedule *schedule);

/* ---- the executor --------------------------------------------------------------------- */

/* Runs layers[0 … l−1] on x under the Revolve schedule with `slots` slots and returns
 * x_l, a new Var the caller owns (x is borrowed). With grad mode on, one node goes on the
 * tape (op "revolve", named "revolve h.0-h.7, s=3", tagged TAG_CHECKPOINT_INPUT as a region's
 * node is); its backward reverses the chain, accumulating every layer's parameter
 * gradients and x's gradient. With grad mode off the layers simply run. The layers and
 * ctx must live until that backward has run (ctx's generator is saved and restored, as a
 * checkpoint region does). NULL on error — REMAT_EINVAL for a NULL layer or input, l < 1 or
 * slots < 1; a layer's error, or the memory budget's — with nothing recorded or kept and
 * ctx's generator as it was. */
Var *revolve_forward(Layer **layers, int l, int slots, Var *x, TrainCtx *ctx);

#endif /* REMAT_REVOLVE_H */
