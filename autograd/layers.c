/*
 * layers.c — the Layer interface and the MLP chain's residual block (see layers.h).
 * The GPT block is in layers_gpt.c.
 */
#include "autograd/layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/ops.h"

static const char *const DROPOUT_RNGS[] = {"stream", "counter"};
const NameTable DROPOUT_RNG_NAMES = {DROPOUT_RNGS, 2};

const char *dropout_rng_name(DropoutRng rng)
{
    return name_of(&DROPOUT_RNG_NAMES, (int)rng);
}

Var *dropout_apply(Var *x, float p, TrainCtx *ctx, uint32_t instance, const char *tag)
{
    const bool training = ctx && ctx->training;
    if (!training || ctx->dropout_rng == DROPOUT_RNG_STREAM)
        return op_dropout(x, p, ctx ? &ctx->rng : NULL, training, tag);
    const CounterKey key = dropout_counter_key(ctx, instance);
    return op_dropout_counter(x, p, &key, training, tag);
}

CounterKey dropout_counter_key(const TrainCtx *ctx, uint32_t instance)
{
    return (CounterKey){.seed = ctx->seed, .step = ctx->step, .micro_batch = ctx->micro_batch, .op = instance};
}

static const char *const ATTENTION_KINDS[] = {"naive", "fused"};
const NameTable ATTENTION_KIND_NAMES = {ATTENTION_KINDS, 2};

const char *attention_kind_name(AttentionKind kind)
{
    return name_of(&ATTENTION_KIND_NAMES, (int)kind);
}

Var *layer_forward(Layer *layer, Var *x, TrainCtx *ctx)
{
    if (!layer || !x) {
        remat_fail(REMAT_EINVAL, "layer_forward: %s is NULL", layer ? "input" : "layer");
        return NULL;
    }
    const void *owner;
    if (param_owner_set(layer, &owner) != REMAT_OK) return NULL;
    tape_set_scope(layer->name);
    Var *y = layer->forward(layer, x, ctx);
    tape_set_scope(NULL);
    param_owner_set(owner, NULL);
    return y;
}

Var *layers_forward(Layer **layers, int n, Var *x, TrainCtx *ctx)
{
    Var *h = var_retain(x);
    for (int i = 0; i < n && h; i++) {
        Var *next = layer_forward(layers[i], h, ctx);
        var_free(h);
        h = next;
    }
    return h;
}

void *layer_alloc(size_t size, const char *kind, const char *name, LayerForwardFn forward)
{
    Layer *layer = calloc(1, size);
    if (!layer) {
        remat_fail(REMAT_ENOMEM, "%s: no memory for a layer", kind);
        return NULL;
    }
    layer->kind = kind;
    snprintf(layer->name, sizeof layer->name, "%s", name ? name : kind);
    layer->forward = forward;
    return layer;
}

void layer_free(Layer *layer)
{
    if (!layer) return;
    for (int i = 0; i < layer->n_params; i++) var_free(layer->params[i].var);
    free(layer);
}

Var *param_create(const char *name, int ndim, const int *shape, float std, float fill, Pcg32 *rng)
{
    Tensor *t = tensor_create(MEM_PARAM, ndim, shape);
    if (!t) return NULL;
    for (size_t i = 0; i < t->numel; i++) t->f32[i] = std > 0.0f ? std * pcg32_normal(rng) : fill;
    return var_create(t, true, name);
}

Var *layer_add_param(Layer *layer, const char *suffix, bool decay, int ndim, const int *shape,
                     float std, float fill, Pcg32 *rng)
{
    if (layer->n_params == LAYER_MAX_PARAMS) {
        remat_fail(REMAT_EINVAL, "%s: more than %d parameters", layer->name, LAYER_MAX_PARAMS);
        return NULL;
    }
    char name[NODE_NAME_LEN];
    snprintf(name, sizeof name, "%s.%s", layer->name, suffix);
    Var *v = param_create(name, ndim, shape, std, fill, rng);
    if (v) layer->params[layer->n_params++] = (Param){v, decay};
    return v;
}

/* ---- the residual MLP block ----------------------------------------------------------- */

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
    Var *r = op_relu(h, "mlp.relu");
    var_free(h); /* relu saved its output; h itself is no longer needed */
    Var *y = op_add(x, r, "mlp.residual");
    var_free(r);
    return y;
}

Layer *residual_mlp_create(const char *name, int width, float std, Pcg32 *rng)
{
    if (width <= 0 || !(std >= 0.0f)) {
        remat_fail(REMAT_EINVAL, "residual_mlp_create: need width > 0 and std >= 0, got %d and %g",
                   width, (double)std);
        return NULL;
    }
    ResidualMlp *l = layer_alloc(sizeof *l, "residual_mlp", name, residual_mlp_forward);
    if (!l) return NULL;
    l->weight = layer_add_param(&l->base, "weight", true, 2, (int[]){width, width}, std, 0.0f, rng);
    l->bias = layer_add_param(&l->base, "bias", false, 1, (int[]){width}, 0.0f, 0.0f, rng);
    if (!l->weight || !l->bias) {
        layer_free(&l->base);
        return NULL;
    }
    return &l->base;
}
