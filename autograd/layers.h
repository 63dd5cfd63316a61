/*
 * layers.h — layers: a named group of parameters with a forward built from ops.
 *
 * Every layer is called the same way, Var *layer_forward(Layer *, Var *x, TrainCtx *), so
 * a model is a sequence of layers and a checkpoint strategy can wrap any contiguous run
 * of them in a region without knowing what they are. A layer owns its parameters (leaf
 * Vars in MEM_PARAM); its nodes are named under the layer's name ("h.3.mlp.fc").
 *
 * Concrete layers put `Layer base` first, so a pointer to one is a pointer to a Layer.
 */
#ifndef REMAT_LAYERS_H
#define REMAT_LAYERS_H

#include "autograd.h"
#include "optim.h"
#include "rng.h"

#define LAYER_MAX_PARAMS 16
#define LAYER_NAME_LEN 24

/* What a forward pass needs beyond its input: whether dropout is active, and the
 * generator its masks are drawn from. Checkpoint regions save and restore `rng`. */
typedef struct TrainCtx {
    Pcg32 rng;
    bool training;
} TrainCtx;

typedef struct Layer Layer;
typedef Var *(*LayerForwardFn)(Layer *layer, Var *x, TrainCtx *ctx);

struct Layer {
    const char *kind;               /* "linear_relu", "gpt_block", ... */
    char name[LAYER_NAME_LEN];      /* scope of its nodes, e.g. "h.3" */
    LayerForwardFn forward;
    int n_params;
    Param params[LAYER_MAX_PARAMS]; /* owned: freed by layer_free */
};

/* Runs the layer on `x` with its nodes named under the layer's name. Returns a new Var
 * (caller owns) or NULL on error; `x` is borrowed. */
Var *layer_forward(Layer *layer, Var *x, TrainCtx *ctx);

/* Frees the layer and its parameters (and their gradients). NULL is a no-op. */
void layer_free(Layer *layer);

/* A new float32 parameter (MEM_PARAM, requires grad) named `name`, filled with
 * N(0, std²) draws from `rng` (std = 0: zeros; `fill` ≠ 0 with std = 0: that constant).
 * NULL on error. */
Var *param_create(const char *name, int ndim, const int *shape, float std, float fill, Pcg32 *rng);

/* ---- the MLP chain's layer ----------------------------------------------------------- */

/* y = relu(x·W + b) with W (width_in, width_out) initialised N(0, 2/width_in) (He et al.
 * 2015, which keeps activations' scale through a deep ReLU chain) and b = 0.
 * Tags: "mlp.fc", "mlp.relu". NULL on error. */
Layer *linear_relu_create(const char *name, int width_in, int width_out, Pcg32 *rng);

#endif /* REMAT_LAYERS_H */
