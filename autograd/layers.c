/*
 * layers.c — the Layer interface: running layers, and building one's parameters (see
 * layers.h).
 */
#include "autograd/layers.h"

#include <stdio.h>
#include <stdlib.h>

/* One layer on `x` (borrowed), its nodes named under the layer's name. */
static Var *run_layer(Layer *layer, Var *x, TrainCtx *ctx)
{
    if (!layer || !x)
        return remat_fail_null(REMAT_EINVAL, "layers_forward: %s is NULL", layer ? "input" : "a layer");
    if (tape_set_stage(layer, layer->name) != REMAT_OK) return NULL;
    Var *y = layer->forward(layer, x, ctx);
    tape_set_stage(NULL, NULL);
    return y;
}

Var *layers_forward(Layer *const *layers, int n, Var *x, TrainCtx *ctx)
{
    Var *h = n > 0 ? run_layer(layers[0], x, ctx) : var_retain(x); /* x itself stays the caller's */
    for (int i = 1; i < n && h; i++) h = then_free(run_layer(layers[i], h, ctx), h);
    return h;
}

void layer_free(Layer *layer)
{
    if (!layer) return;
    for (int i = 0; i < layer->n_params; i++) var_free(layer->params[i].var);
    free(layer);
}

Var *param_create(const char *name, int ndim, const int *shape, float std, float fill, Pcg32 *rng)
{
    Tensor *t = tensor_create(MEM_PARAM, DTYPE_F32, ndim, shape);
    if (!t) return NULL;
    for (size_t i = 0; i < t->numel; i++) t->f32[i] = std > 0.0f ? std * pcg32_normal(rng) : fill;
    return var_create(t, true, name);
}

void *layer_create(size_t size, const char *kind, const char *name, LayerForwardFn forward, const ParamSpec *params,
                   int n, Pcg32 *rng)
{
    if (n > LAYER_MAX_PARAMS)
        return remat_fail_null(REMAT_EINVAL, "%s: more than %d parameters", name ? name : kind, LAYER_MAX_PARAMS);
    Layer *layer = calloc(1, size);
    if (!layer) return remat_fail_null(REMAT_ENOMEM, "%s: no memory for a layer", kind);
    *layer = (Layer){.forward = forward}; /* the rest of `size` stays zero */
    snprintf(layer->name, sizeof layer->name, "%s", name ? name : kind);
    for (int i = 0; i < n; i++) {
        char param[NODE_NAME_LEN];
        snprintf(param, sizeof param, "%s.%s", layer->name, params[i].suffix);
        Var *v = param_create(param, params[i].ndim, params[i].shape, params[i].std, params[i].fill, rng);
        if (!v) {
            layer_free(layer);
            return NULL;
        }
        layer->params[layer->n_params++] = (Param){v, params[i].decay};
    }
    return layer;
}
