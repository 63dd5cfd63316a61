/*
 * model.c — running a Model's stages in order, and freeing one (see model.h).
 */
#include "models/model.h"

#include <stdlib.h>

Var *model_loss_planned(Model *model, const Schedule *schedule, Var *input, Var *targets, TrainCtx *ctx)
{
    if (!model || !input || !targets)
        return remat_fail_null(REMAT_EINVAL, "model_loss: model, input and targets are required");
    if (tape_set_stage(model, NULL) != REMAT_OK) return NULL; /* the embedding and head's parameters */
    Var *x = model->embed(model, input, ctx);
    if (x) /* whatever the chain saves of x stays alive through the tape */
        x = then_free(schedule ? schedule_forward(schedule, model->layers, model->n_layers, x, ctx)
                               : layers_forward(model->layers, model->n_layers, x, ctx), x);
    const bool head = x && tape_set_stage(model, NULL) == REMAT_OK;
    return then_free(head ? model->head(model, x, targets, ctx) : NULL, x);
}

/* The model's stages as the profiling step calls them. */
typedef struct ProfiledModel {
    Model *model;
    Var *input, *targets;
} ProfiledModel;

static Var *profiled_embed(void *user, TrainCtx *ctx)
{
    ProfiledModel *p = user;
    return p->model->embed(p->model, p->input, ctx);
}

static Var *profiled_head(void *user, Var *x, TrainCtx *ctx)
{
    ProfiledModel *p = user;
    return p->model->head(p->model, x, p->targets, ctx);
}

ChainCost *model_profile(Model *model, Var *input, Var *targets, const TrainCtx *ctx, const Policy *policy,
                         PlannerKind planner)
{
    if (!model || !input || !targets)
        return remat_fail_null(REMAT_EINVAL, "model_profile: model, input and targets are required");
    ProfiledModel p = {model, input, targets};
    const ChainStages stages = {profiled_embed, profiled_head, &p};
    ChainCost *cost = chain_profile_policy(model->layers, model->n_layers, &stages, ctx, policy);
    if (cost && planner == PLANNER_OPS && chain_profile_ops(cost, model->layers, &stages, ctx) != REMAT_OK) {
        chain_cost_free(cost);
        return NULL; /* the op-level pass's error stays said */
    }
    return cost;
}

void model_free(Model *model)
{
    if (!model) return;
    for (int i = 0; i < model->n_layers; i++) layer_free(model->layers[i]);
    if (model->free_extra) model->free_extra(model);
    free(model->params);
    free(model);
}

size_t model_param_bytes(const Model *model)
{
    size_t bytes = 0;
    for (int i = 0; i < model->n_params; i++) bytes += model->params[i].var->value->bytes;
    return bytes;
}

RematStatus model_collect_params(Model *model, const Param *extra, int n_extra, const Param *tail, int n_tail)
{
    int n = n_extra + n_tail;
    for (int i = 0; i < model->n_layers; i++) n += model->layers[i]->n_params;
    Param *all = malloc((size_t)n * sizeof *all);
    if (!all) return remat_fail(REMAT_ENOMEM, "model: no memory for a list of %d parameters", n);
    int k = 0;
    for (int i = 0; i < n_extra; i++) all[k++] = extra[i];
    for (int i = 0; i < model->n_layers; i++)
        for (int j = 0; j < model->layers[i]->n_params; j++) all[k++] = model->layers[i]->params[j];
    for (int i = 0; i < n_tail; i++) all[k++] = tail[i];
    free(model->params);
    model->params = all;
    model->n_params = n;
    return REMAT_OK;
}
