/*
 * mlp.c — the MLP chain whole: its residual block, the model built from N of them, and
 * its teacher task (see mlp.h). The block is a Layer (autograd/layers.h) like any other,
 * so checkpoint strategies treat it as they treat the GPT's.
 */
#include "models/mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "autograd/ops.h"

/* ---- the residual block ------------------------------------------------------------------ */

typedef struct ResidualMlp {
    Layer base;
    Var *weight; /* (width, width), borrowed from base.params */
    Var *bias;   /* (width) */
} ResidualMlp;

/* y = x + relu(x·W + b). What backward keeps: the linear saves x, the relu saves its
 * output r; the sum saves nothing, and y is the next block's x. Two activations of B·W
 * floats per block, one of which is the block's input. */
static Var *residual_mlp_forward(Layer *layer, Var *x, TrainCtx *ctx)
{
    (void)ctx;
    ResidualMlp *l = (ResidualMlp *)layer;
    Var *h = op_linear(x, l->weight, l->bias, "mlp.fc");
    Var *r = then_free(op_relu(h, "mlp.relu"), h); /* relu saved its output, not h */
    return then_free(op_add(x, r, "mlp.residual"), r);
}

/* The block `name` of width W, with W drawn from N(0, std²) and b = 0; mlp_create has
 * checked the sizes. Tags: "mlp.fc", "mlp.relu", "mlp.residual". NULL on error (budget). */
static Layer *residual_mlp_create(const char *name, int width, float std, Pcg32 *rng)
{
    const ParamSpec params[] = {{"weight", 2, {width, width}, std, .decay = true}, {"bias", 1, {width}, .fill = 0.0f}};
    ResidualMlp *l = layer_create(sizeof *l, "residual_mlp", name, residual_mlp_forward, params, 2, rng);
    if (!l) return NULL;
    l->weight = l->base.params[0].var;
    l->bias = l->base.params[1].var;
    return &l->base;
}

/* ---- the model -------------------------------------------------------------------------- */

static Var *identity_embed(Model *model, Var *input, TrainCtx *ctx)
{
    (void)model, (void)ctx;
    return var_retain(input);
}

static Var *mse_head(Model *model, Var *x, Var *targets, TrainCtx *ctx)
{
    (void)model, (void)ctx;
    return op_mse(x, targets, "loss");
}

Model *mlp_create(const MlpConfig *config)
{
    if (!config || config->n_layers < 1 || config->width < 1)
        return remat_fail_null(REMAT_EINVAL, "mlp: need at least 1 layer and width 1, got %d layers of width %d",
                               config ? config->n_layers : 0, config ? config->width : 0);
    Model *m = calloc(1, sizeof *m + (size_t)config->n_layers * sizeof(Layer *)); /* the chain's array after it */
    if (!m) return remat_fail_null(REMAT_ENOMEM, "mlp: no memory for %d layers", config->n_layers);
    *m = (Model){.kind = "mlp", .layers = (Layer **)(m + 1), .embed = identity_embed, .head = mse_head};
    Pcg32 rng;
    pcg32_seed(&rng, config->seed, 1);
    const float std = sqrtf(2.0f / (float)config->width) / (float)config->n_layers;
    for (int i = 0; i < config->n_layers; i++) {
        char name[LAYER_NAME_LEN];
        snprintf(name, sizeof name, "h.%d", i);
        if (!(m->layers[i] = residual_mlp_create(name, config->width, std, &rng))) break;
        m->n_layers = i + 1;
    }
    if (m->n_layers == config->n_layers && model_collect_params(m, NULL, 0, NULL, 0) == REMAT_OK) return m;
    model_free(m);
    return NULL;
}

double mlp_param_count(const MlpConfig *config)
{
    const double W = config->width;
    return config->n_layers * (W * W + W); /* residual_mlp: weight (W,W), bias (W) */
}

/* The block and the loss as the chain model walks them (residual_mlp_forward, op_mse):
 * linear, relu, add; and the MSE, which saves its prediction. */
ChainCost *mlp_chain_model(const MlpConfig *config, int batch, const Policy *policy, bool ops)
{
    if (!config || config->n_layers < 1 || config->width < 1 || batch < 1)
        return remat_fail_null(REMAT_EINVAL, "mlp: need at least 1 layer, width 1 and batch 1");
    const uint64_t W = (uint64_t)config->width, n = (uint64_t)batch * W, a = n * sizeof(float); /* n elements */
    const ChainOp block[] = {
        {"linear", "mlp.fc", .in = {0, -1, -1}, .saves = 1, .out = a, .flops = 2 * n * W + n},
        {"relu", "mlp.relu", .in = {1, -1, -1}, .saves = CHAIN_SAVES_OUT, .out = a, .flops = n},
        {"add", "mlp.residual", .in = {0, 2, -1}, .out = a, .flops = n},
    };
    const ChainOp mse = {"mse", "loss", .in = {0, -1, -1}, .saves = 1, .out = sizeof(float), .flops = 3 * n};
    const double params = mlp_param_count(config) * sizeof(float);
    return chain_model(&(ChainShape){.base = 2 * a, .embed = {NULL, 0, a, false},
                                     .layer = {block, 3, a, false}, /* x_0 is the batch: no gradient */
                                     .n_layers = config->n_layers, .head = {&mse, 1, a, true},
                                     .fixed = (size_t)(2 * params + mlp_task_bytes(config->width)),
                                     .policy = policy, .ops = ops});
}

/* ---- the teacher task ------------------------------------------------------------------- */

struct MlpTask {
    int width;
    Var *t1, *t2; /* the teacher's weights (W, W), MEM_WORK, no gradient */
};

static Var *teacher_weight(int width, Pcg32 *rng)
{
    Tensor *t = tensor_create(MEM_WORK, DTYPE_F32, 2, (int[]){width, width});
    if (!t) return NULL;
    const float std = sqrtf(2.0f / (float)width);
    for (size_t i = 0; i < t->numel; i++) t->f32[i] = std * pcg32_normal(rng);
    return var_create(t, false, "teacher");
}

double mlp_task_bytes(int width)
{
    return 2.0 * (double)width * (double)width * sizeof(float);
}

MlpTask *mlp_task_create(int width, uint64_t seed)
{
    if (width < 1) return remat_fail_null(REMAT_EINVAL, "mlp task: width must be >= 1, got %d", width);
    MlpTask *task = calloc(1, sizeof *task);
    if (!task) return remat_fail_null(REMAT_ENOMEM, "mlp task: no memory");
    task->width = width;
    Pcg32 init;
    pcg32_seed(&init, seed, 2);
    task->t1 = teacher_weight(width, &init);
    task->t2 = task->t1 ? teacher_weight(width, &init) : NULL;
    if (task->t2) return task;
    mlp_task_free(task);
    return NULL;
}

void mlp_task_free(MlpTask *task)
{
    if (!task) return;
    var_free(task->t1);
    var_free(task->t2);
    free(task);
}

RematStatus mlp_task_batch(MlpTask *task, Pcg32 *rng, int batch, Var **x, Var **y)
{
    *x = *y = NULL;
    if (!task || !rng || batch < 1)
        return remat_fail(REMAT_EINVAL, "mlp task: need a task, a generator and a batch >= 1 (got %d)", batch);
    Tensor *xt = tensor_create(MEM_ACT, DTYPE_F32, 2, (int[]){batch, task->width});
    if (!xt) return remat_last_status();
    for (size_t i = 0; i < xt->numel; i++) xt->f32[i] = pcg32_normal(rng);
    Var *input = var_create(xt, false, "x");
    if (!input) return remat_last_status();

    bool was = grad_set_enabled(false);
    const FlopCounts before = flops_snapshot(); /* the teacher is data, not training work */
    Var *h = op_linear(input, task->t1, NULL, "teacher.fc1");
    Var *a = then_free(op_relu(h, "teacher.relu1"), h);
    Var *o = then_free(op_linear(a, task->t2, NULL, "teacher.fc2"), a);
    Var *target = then_free(op_relu(o, "teacher.relu2"), o);
    flops_restore(&before);
    grad_set_enabled(was);
    if (!target) {
        var_free(input);
        return remat_last_status();
    }
    *x = input;
    *y = target;
    return REMAT_OK;
}
