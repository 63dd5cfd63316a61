/*
 * replay.h — the one way remat re-runs forward work: a scope entered before and left
 * after, around every replay of every strategy (a checkpoint region's, a selective
 * policy's, Revolve's advances and reversals).
 *
 * Re-running a forward correctly needs five things set together and put back together:
 *
 *   tape       a private tape, so the replay's nodes never mix with the step's
 *   grad mode  on, to record what backward will walk (off for an advance that only
 *              moves a state along, keeping nothing)
 *   FLOPs      counted as RECOMPUTE: forward work done a second time (quiz question 1)
 *   generator  back at its state when the forward first ran, so dropout draws the same
 *              masks (quiz question 7), and afterwards where the rest of the step expects
 *   op hooks   a selective policy's cache, which serves the outputs it kept
 *
 * A replay is then
 *
 *     ReplayScope scope;
 *     replay_enter(&scope, &(ReplayOptions){.record = true, .ctx = ctx, .rng = &at_entry});
 *     Var *x = replay_input(saved_x, dx_buffer, true, "checkpoint.input");
 *     Var *y = fn(x);                          the forward again, taped, RECOMPUTE
 *     replay_backward(&scope, y, dy);          dy through the private tape, BACKWARD
 *     var_free(x);
 *     replay_leave(&scope);                    tape, grad mode, phase, generator, hooks back
 *
 * What this is not: a policy. It does not decide what is recomputed or kept; regions
 * (checkpoint.h) and Revolve (revolve.h) do, and both replay through it, and record
 * their one tape node with replay_record.
 */
#ifndef REMAT_CHECKPOINT_REPLAY_H
#define REMAT_CHECKPOINT_REPLAY_H

#include "autograd/layers.h"

typedef struct ReplayOptions {
    bool record;          /* grad on into a private tape (to backpropagate through), or
                             grad off (an advance: nothing is kept) */
    TrainCtx *ctx;        /* the step's context, whose generator is replayed (may be NULL) */
    const Pcg32 *rng;     /* the generator state to replay from; NULL: leave it running */
    const OpHooks *hooks; /* pushed for the replay (a policy's cache); NULL: none */
} ReplayOptions;

/* What replay_enter changed and replay_leave puts back. */
typedef struct ReplayScope {
    bool entered;     /* false: empty (replay_enter failed, or was not called) */
    Tape *tape;       /* the replay's own tape when recording, else NULL */
    Tape *outer_tape;
    bool outer_grad;
    Phase outer_phase;
    TrainCtx *ctx;    /* the context whose generator the replay set, or NULL */
    Pcg32 outer_rng;  /* ctx's generator at entry */
    bool hooks_pushed;
} ReplayScope;

/* Enters a replay as `opts` says (see the top of this file). On error (no memory for the
 * tape, the hooks stack full) returns the status with nothing changed and the scope
 * empty; replay_leave on an empty scope is a no-op. */
RematStatus replay_enter(ReplayScope *scope, const ReplayOptions *opts);

/* The input the replay runs from: a leaf Var holding a new reference to x. When
 * `want_grad`, its gradient accumulates into `dx_into` if one is given (the engine's
 * buffer for the region's input) or into a fresh MEM_ACT buffer otherwise. The caller
 * owns the Var. NULL on error. */
Var *replay_input(const Tensor *x, Tensor *dx_into, bool want_grad, const char *name);

/* Backpropagates dy (only read) from y through the replay's tape, counting BACKWARD
 * FLOPs, then restores the RECOMPUTE phase. The scope's op hooks are popped first: they
 * serve the replay's forward, and a region nested inside has hooks of its own. Takes y: its value is freed first, since
 * backward needs the node that made it, not the value. A y made by no node (nothing
 * inside needed a gradient) is simply freed. REMAT_ESTATE when the scope does not record. */
RematStatus replay_backward(ReplayScope *scope, Var *y, const Tensor *dy);

/* The one tape node a region or a Revolve chain records for its whole forward: `op`,
 * tagged TAG_CHECKPOINT_INPUT, over x, recorded even when x needs no gradient (the
 * parameters inside do), named `name`, owning `state` (freed by state_free) and saving
 * `saved` for its backward. Takes y and state: returns a new Var of y's value made by the
 * node; NULL on error, with y and state freed and nothing recorded. */
Var *replay_record(const OpInfo *op, Var *x, Var *y, const char *name, void *state, void (*state_free)(void *),
                   Tensor *saved);

/* A cheap 64-bit hash of a tensor's bytes and shape, enough to tell whether a replay
 * reproduced its first forward (the determinism check). */
uint64_t replay_hash(const Tensor *t);

/* Leaves the replay: pops its hooks, frees its tape and puts grad mode, the FLOP phase,
 * the current tape and the generator back as they were at replay_enter. */
void replay_leave(ReplayScope *scope);

#endif /* REMAT_CHECKPOINT_REPLAY_H */
