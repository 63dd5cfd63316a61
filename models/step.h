/*
 * step.h — one training step: the only one in remat. `train`, every bench and the tests
 * run their steps through step_run, so what a step does is written here once:
 *
 *     zero the gradients    every parameter's
 *     forward               loss = the model under the schedule (FORWARD FLOPs); with offload,
 *                           its hooks are pushed for the forward only, so what the forward
 *                           saves goes to the spill file and backward reads it back
 *     (forward_done)        a caller's look at the tape before backward consumes it
 *     backward              BACKWARD FLOPs, and RECOMPUTE inside checkpoint regions
 *     (backward_done)       a caller's look at the gradients before they are applied
 *     optimizer             OPTIMIZER FLOPs, only if everything before succeeded
 *
 * All or nothing: a step that fails anywhere (the memory budget, an offload record that
 * does not read back, a region's determinism check) has not touched the parameters or
 * the optimizer state, so the caller may redo it or stop with nothing lost. Whatever
 * happens, the step leaves no node on the tape and no activation alive but the batch.
 *
 * What it is not: data loading, evaluation or timing. The caller draws the batch and owns
 * the clock; the step is what both the training loop and the benches put on it.
 */
#ifndef REMAT_MODELS_STEP_H
#define REMAT_MODELS_STEP_H

#include "autograd/optim.h"
#include "models/model.h"
#include "offload/offload.h"

/* What a step runs: the model, what its forward keeps, where the kept tensors go, and
 * what applies the gradients. All borrowed. */
typedef struct Step {
    Model *model;
    const Schedule *schedule; /* what the forward keeps (checkpoint/schedule.h); NULL: none */
    Offload *offload;         /* saved activations go to its spill file; NULL: they stay in RAM */
    Optimizer *optim;         /* NULL: the step only computes gradients */
} Step;

/* Optional looks into a step. Each may fail, which fails the step (nothing is updated). */
typedef struct StepHooks {
    RematStatus (*forward_done)(void *user, Var *loss);  /* the forward's tape is complete */
    RematStatus (*backward_done)(void *user, Var *loss); /* every gradient is computed */
    void *user;
} StepHooks;

typedef struct StepResult {
    float loss;        /* the step's loss; NaN when its forward failed */
    size_t act_stored; /* MEM_ACT held between the forward and the backward */
} StepResult;

/* The step's forward alone, offload's hooks around it as step_run pushes them: the loss,
 * a new Var the caller owns, with the tape holding what backward would need; NULL on
 * error. For a census of what a forward keeps (bench/measure.h); a training step is
 * step_run. */
Var *step_forward(const Step *step, Var *input, Var *targets, TrainCtx *ctx);

/* Runs one training step of step->model on (input, targets), both borrowed, with the
 * dropout generator of ctx (advanced by the step's draws). `hooks` may be NULL. On error
 * returns the status with the parameters and optimizer state as they were. */
RematStatus step_run(const Step *step, Var *input, Var *targets, TrainCtx *ctx, const StepHooks *hooks,
                     StepResult *out);

#endif /* REMAT_MODELS_STEP_H */
