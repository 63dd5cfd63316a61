/*
 * model.h — a model as remat sees it: an input stage, a chain of layers, and a head.
 *
 *     input ──embed──▶ x_0 ──layer 0──▶ x_1 ── ... ──layer N−1──▶ x_N ──head(targets)──▶ loss
 *
 * The chain in the middle is what checkpoint schedules work on: every layer maps one Var
 * to one Var of the same shape, so any contiguous run of them can become a checkpoint
 * region. Both reference models (the MLP chain and the char-level GPT) are Models.
 */
#ifndef REMAT_MODEL_H
#define REMAT_MODEL_H

#include "autograd/layers.h"
#include "checkpoint/planner.h"

typedef struct Model Model;

struct Model {
    const char *kind;  /* "mlp" or "gpt" */
    int n_layers;
    Layer **layers;    /* the chain, owned; the array is in the model's own allocation */
    int n_params;
    Param *params;     /* every parameter (borrowed from the stages that own them), in file order */
    /* input → x_0. The MLP's is the identity; the GPT's looks up embeddings. */
    Var *(*embed)(Model *model, Var *input, TrainCtx *ctx);
    /* x_N and targets → a single-element loss. */
    Var *(*head)(Model *model, Var *x, Var *targets, TrainCtx *ctx);
    /* Frees what the kind adds beyond the chain (embeddings, head parameters). */
    void (*free_extra)(Model *model);
};

/* embed → every layer → head, each intermediate freed as then_free (layers.h) says, the chain
 * run as `schedule` says (schedule.h: made for a chain of this model's length; NULL: strategy
 * none). Returns the loss (caller owns) or NULL on error. `input` and `targets` are borrowed. */
Var *model_loss_planned(Model *model, const Schedule *schedule, Var *input, Var *targets, TrainCtx *ctx);

/* The chain cost model of `model` (planner.h), measured by one profiling step on this
 * batch (`input` and `targets` borrowed) with the dropout generator of `ctx` (copied, not
 * advanced); with a `policy` (else NULL), a third pass profiles its one-layer regions
 * (checkpoint/cost.h: chain_profile_policy); for `planner` PLANNER_OPS, the op-level model
 * it plans with is measured too (chain_profile_ops); the other planners need only the
 * chain's. Leaves gradients in the parameters: zero them before training. Create the
 * optimizer first, so that the cost's fixed memory includes its state. The caller owns
 * the result (chain_cost_free); NULL on error. */
ChainCost *model_profile(Model *model, Var *input, Var *targets, const TrainCtx *ctx, const Policy *policy,
                         PlannerKind planner);

/* Frees the model, its layers and all parameters. NULL is a no-op. */
void model_free(Model *model);

/* Bytes of all parameters. */
size_t model_param_bytes(const Model *model);

/* Collects the parameters of the chain's layers after `extra` (n_extra, e.g. embeddings)
 * and before `tail` (n_tail, e.g. a final norm) into model->params. REMAT_ENOMEM on error. */
RematStatus model_collect_params(Model *model, const Param *extra, int n_extra, const Param *tail, int n_tail);

#endif /* REMAT_MODEL_H */
