/*
 * step.h — one training step: the only one in remat. `train`, every bench and the tests
 * run their steps through step_run, so what a step does is written here once:
 *
 *     for each micro-batch this process runs:
 *       zero the gradients  every parameter's
 *       forward             loss = the model under the schedule (FORWARD FLOPs)
 *       (forward_done)      a caller's look at the tape before backward consumes it
 *       backward            BACKWARD FLOPs, and RECOMPUTE inside checkpoint regions
 *       (backward_done)     a caller's look at the micro-batch's gradients
 *       accumulate          the micro-batch's gradients added to the sum of those before it
 *     reduce                the sum × 1/K
 *     optimizer             OPTIMIZER FLOPs, only if everything before succeeded
 *
 * Capabilities plug in (StepPlug), and only when asked for: offload pushes its hooks
 * around each forward, so what the forward saves goes to the spill file and backward reads
 * it back; data parallelism (parallel/zero.h) runs this rank's micro-batch, gathers ZeRO
 * stage 3's parameters as they are used, reduces over the ranks' micro-batches in rank
 * order, and from stage 1 updates this rank's shard. A step without plugs calls no code
 * of offload/ or parallel/.
 *
 * Micro-batches. A step of K micro-batches computes the gradient of the mean of their K
 * losses, in one process (`train --accumulate K`) or one micro-batch on each of K ranks
 * (`mpirun -np K train`), to the same bits. The arithmetic is fixed so that both do the
 * same float operations: each micro-batch's gradient g_r is computed alone, from zeroed
 * gradients, never added by backward into a gradient already holding another micro-batch's
 * (a += inside backward rounds differently from computing g_r and adding it); then
 * s = g_0, s = s + g_r for r = 1..K-1 in order, and the gradient applied is s · (1/K). One
 * micro-batch (K = 1) skips both, so it is exactly the step without accumulation. The
 * loss reported is the K losses summed in the same order, divided by K.
 *
 * Dropout. Micro-batch r of a step draws its masks from the step's generator (ctx->rng)
 * moved ahead by r · 2^40 draws, so every micro-batch has its own stretch of the stream and
 * no process needs another's draws to find its own; micro-batch 0 draws exactly what a
 * step of one micro-batch draws. Every micro-batch draws the same count D (the same shapes
 * pass the same dropouts), so the generator after the step is where micro-batch 0 ended,
 * S + D, which every process computes from its own micro-batch r as (S + r·2^40 + D) − r·2^40.
 *
 * All or nothing: a step that fails anywhere (the memory budget, an offload record that
 * does not read back, a region's determinism check, a loss that is not finite: training
 * diverged) has not touched the parameters or the optimizer state, so the caller may
 * redo it or stop with nothing lost. Whatever
 * happens, the step leaves no node on the tape and no activation alive but the batch.
 *
 * What it is not: data loading, evaluation or timing. The caller draws the batch and owns
 * the clock; the step is what both the training loop and the benches put on it.
 */
#ifndef REMAT_MODELS_STEP_H
#define REMAT_MODELS_STEP_H

#include "parallel/pipeline.h"
#include "parallel/zero.h"
#include "models/model.h"
#include "offload/offload.h"

/* How far apart the dropout streams of two successive micro-batches start: 2^40 draws, far
 * more than one micro-batch draws. */
#define STEP_MICRO_BATCH_STRIDE ((uint64_t)1 << 40)

/* A capability plugged into a step; every member may be NULL (nothing happens there). */
typedef struct StepPlug {
    RematStatus (*forward_begin)(void *ctx); /* before each micro-batch's forward */
    RematStatus (*forward_end)(void *ctx);   /* after it, before its backward: called even
                                                when the forward failed */
    void (*pass_begin)(void *ctx);           /* around every micro-batch's forward and */
    void (*pass_end)(void *ctx);             /* backward this process runs */
    /* Replaces "the sum × 1/K": the gradient of the step's K micro-batches, of which this
     * process ran one, micro_batch, with `loss`; *mean_loss the mean of the K losses. */
    RematStatus (*reduce)(void *ctx, float loss, float *mean_loss);
    RematStatus (*optimizer_step)(void *ctx, Optimizer *opt); /* replaces optim_step */
    int micro_batch; /* with reduce: the index of the micro-batch this process runs */
    void *ctx;
} StepPlug;

enum { STEP_MAX_PLUGS = 2 };

/* What a step runs: the model, what its forward keeps, what applies the gradients, and the
 * capabilities plugged in. All borrowed. */
typedef struct Step {
    Model *model;
    const Schedule *schedule; /* what the forward keeps (checkpoint/schedule.h); NULL: none */
    Optimizer *optim;         /* NULL: the step only computes gradients; with data parallelism
                                 from ZeRO stage 1, the optimizer of this rank's shard
                                 (zero_optimizer_create) */
    StepPlug plugs[STEP_MAX_PLUGS]; /* in order; unused ones all NULL; at most one reduces */
} Step;

/* Offload's plug: its hooks pushed for each forward. NULL gives a plug that does nothing. */
StepPlug step_offload_plug(Offload *off);

/* Data parallelism's plug: this process runs one micro-batch, the one of its rank, and
 * the gradients are reduced over the ranks. NULL gives a plug that does nothing. */
StepPlug step_zero_plug(Zero *zero);

/* One micro-batch: its input and targets, both borrowed. */
typedef struct MicroBatch {
    Var *input, *targets;
} MicroBatch;

/* Optional looks into a step, at the first micro-batch this process runs. Each may fail,
 * which fails the step (nothing is updated). */
typedef struct StepHooks {
    RematStatus (*forward_done)(void *user, Var *loss);  /* the forward's tape is complete */
    RematStatus (*backward_done)(void *user, Var *loss); /* every gradient is computed */
    void *user;
} StepHooks;

typedef struct StepResult {
    float loss;        /* the step's loss, the mean over its micro-batches; NaN when a forward failed */
    size_t act_stored; /* MEM_ACT held between the forward and the backward */
} StepResult;

/* Data parallelism for `model` over `g` at ZeRO `stage` (parallel/zero.h), with its parameter
 * groups for stage 3: each layer's, and the embedding and head's (every parameter in no
 * layer, used under the model's name: model_loss_planned). The caller owns the result
 * (zero_free); NULL on error. */
Zero *step_zero_create(Model *model, const DistGroup *g, int stage);

/* Runs one training step of step->model on n micro-batches (borrowed; n = 1: a step
 * without accumulation): without a plug that reduces, this process runs all n
 * (micro-batch r is batches[r]); with one, n must be 1 and batches[0] is the plug's
 * micro-batch, one of as many as the group has ranks. ctx's generator is the step's (see
 * above: each micro-batch draws from its own stretch of it) and ends where a step of these
 * micro-batches leaves it. `hooks` may be NULL. On error returns the status with the
 * parameters and optimizer state as they were; REMAT_ESTATE if two micro-batches drew
 * different numbers of dropout masks, so that the generator after the step would depend
 * on who ran which. */
RematStatus step_run(const Step *step, const MicroBatch *batches, int n, TrainCtx *ctx, const StepHooks *hooks,
                     StepResult *out);

/* Micro-batch r's gradients into the sums (one slot per parameter, NULL at first), and the
 * sums × 1/n back into .grad, as step_run does: for the pipeline, which runs them. */
void step_accumulate(const Model *m, Tensor **sums, int r);
void step_apply_sums(const Model *m, Tensor **sums, int n);

/* The pipeline (models/pipeline.c): rank g->rank's stage of the GPT `model` (borrowed) over 2
 * to n_layers ranks (pipe_split; the first also embeds, the last runs the head), M micro-batches
 * a step under `schedule`, blocks kept as `strategy` says (not budget). A step runs this stage's
 * part of each, shares the gradients, loss and generator, and applies the same update on every
 * rank (all replicated): bit-identical to `--accumulate M` (parallel/README.md). On a step's
 * error the job must end. The ledger: what the stage moved and waited, its peak MEM_ACT. */
typedef struct StepPipeline StepPipeline;
StepPipeline *step_pipeline_create(Model *model, const Strategy *strategy, const DistGroup *g,
                                   PipeSchedule schedule, int micro_batches);
void step_pipeline_free(StepPipeline *p);
RematStatus step_pipeline_run(StepPipeline *p, Optimizer *optim, const MicroBatch *batches, TrainCtx *ctx,
                              StepResult *out);
const PipeLedger *step_pipeline_ledger(const StepPipeline *p, size_t *peak_act);

#endif /* REMAT_MODELS_STEP_H */
