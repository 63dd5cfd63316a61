/*
 * layers.h — layers: a named group of parameters with a forward built from ops.
 *
 * Every layer is called the same way, layer->forward(layer, x, ctx) through layers_forward,
 * so a model is a sequence of layers and a checkpoint strategy can wrap any contiguous run
 * of them in a region without knowing what they are. A layer owns its parameters (leaf
 * Vars in MEM_PARAM); its nodes are named under the layer's name ("h.3.mlp.fc").
 *
 * Concrete layers put `Layer base` first, so a pointer to one is a pointer to a Layer.
 * What it is not: any concrete layer. Each model's layers live with the model (the MLP
 * chain's residual block in models/mlp.c, the GPT block in models/gpt.c); what a forward
 * needs besides its input, the TrainCtx, is in autograd/train_ctx.h.
 */
#ifndef REMAT_LAYERS_H
#define REMAT_LAYERS_H

#include "autograd/optim.h"
#include "autograd/train_ctx.h"

#define LAYER_MAX_PARAMS 16
#define LAYER_NAME_LEN 24

typedef struct Layer Layer;
typedef Var *(*LayerForwardFn)(Layer *layer, Var *x, TrainCtx *ctx);

struct Layer {
    char name[LAYER_NAME_LEN];      /* scope of its nodes, e.g. "h.3" */
    LayerForwardFn forward;         /* in gdb, its symbol says the kind: <gpt_block_forward> */
    int n_params;
    Param params[LAYER_MAX_PARAMS]; /* owned: freed by layer_free */
};

/* `out`, after freeing `used`: a forward frees each intermediate Var as soon as the op
 * that reads it has run, so that all that stays alive is what the ops saved for backward
 * (`Var *act = then_free(op_gelu(fc, "mlp.gelu"), fc);`). */
static inline Var *then_free(Var *out, Var *used)
{
    var_free(used);
    return out;
}

/* Runs layers[0 .. n) one after another on `x` (borrowed), each with its nodes named under
 * the layer's name, each intermediate freed as soon as the next exists, so only what ops
 * saved stays alive; one layer is layers_forward(&layer, 1, x, ctx). Returns the last
 * output (caller owns; n = 0: x itself, retained) or NULL on error. */
Var *layers_forward(Layer *const *layers, int n, Var *x, TrainCtx *ctx);

/* Frees the layer and its parameters (and their gradients). NULL is a no-op. */
void layer_free(Layer *layer);

/* A new float32 parameter (MEM_PARAM, requires grad) named `name`, filled with
 * N(0, std²) draws from `rng` (std = 0: zeros; `fill` ≠ 0 with std = 0: that constant).
 * NULL on error. */
Var *param_create(const char *name, int ndim, const int *shape, float std, float fill, Pcg32 *rng);

/* One parameter of a layer, a row of the table layer_create reads: "{layer name}.{suffix}",
 * of `shape`, made as param_create makes it, with weight decay when `decay`. */
typedef struct ParamSpec {
    const char *suffix;
    int ndim;
    int shape[TENSOR_MAX_DIMS];
    float std, fill;
    bool decay;
} ParamSpec;

/* For a concrete layer's create function: a zero-filled struct of `size` bytes (which
 * starts with its Layer) named `name` (NULL: `kind`, e.g. "gpt_block") with forward set,
 * and the n parameters of `params`, made in that order from `rng` (layer->params[i] is row
 * i's; the layer owns them). NULL on error, with nothing left allocated: more than
 * LAYER_MAX_PARAMS rows, no memory, or the memory budget. */
void *layer_create(size_t size, const char *kind, const char *name, LayerForwardFn forward, const ParamSpec *params,
                   int n, Pcg32 *rng);

#endif /* REMAT_LAYERS_H */
