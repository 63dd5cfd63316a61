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

#include "autograd/autograd.h"
#include "autograd/optim.h"
#include "base/parse.h"
#include "tensor/counter_rng.h"
#include "tensor/rng.h"

#define LAYER_MAX_PARAMS 16
#define LAYER_NAME_LEN 24

/* Where dropout masks come from: a running PCG32 stream (the default), or a
 * counter-based generator keyed by (seed, step, micro-batch, op instance). */
typedef enum DropoutRng { DROPOUT_RNG_STREAM = 0, DROPOUT_RNG_COUNTER } DropoutRng;

/* What a forward pass needs beyond its input: whether dropout is active, and where its
 * masks come from. With the stream, masks are drawn from `rng`, which checkpoint regions
 * save and restore. With the counter, a mask is a pure function of seed, step,
 * micro_batch and the dropout's op instance (dropout_apply), and `rng` is not used:
 * nothing needs restoring. */
typedef struct TrainCtx {
    Pcg32 rng;
    bool training;
    DropoutRng dropout_rng; /* DROPOUT_RNG_STREAM unless set */
    uint64_t seed;          /* counter: the run's seed */
    uint64_t step;          /* counter: the training step the forward belongs to */
    uint32_t micro_batch;   /* counter: the micro-batch within the step (0: no accumulation) */
} TrainCtx;

/* "stream", "counter": the names of DropoutRng's values. */
extern const NameTable DROPOUT_RNG_NAMES;

/* Its name in DROPOUT_RNG_NAMES. */
const char *dropout_rng_name(DropoutRng rng);

/* Dropout with probability p as `ctx` says: the identity when ctx is NULL or not
 * training; else op_dropout on ctx->rng (stream) or op_dropout_counter with the key
 * (ctx->seed, ctx->step, ctx->micro_batch, `instance`) (counter). `instance` names the
 * dropout site in the model and must be the same every time that site runs — in the
 * first forward and in any replay — and differ between sites: a model numbers its sites
 * from its structure (models/gpt.h says how the GPT does). */
Var *dropout_apply(Var *x, float p, TrainCtx *ctx, uint32_t instance, const char *tag);

/* The counter-based generator's key for op instance `instance` in the step ctx runs:
 * (ctx->seed, ctx->step, ctx->micro_batch, instance). */
CounterKey dropout_counter_key(const TrainCtx *ctx, uint32_t instance);

typedef struct Layer Layer;
typedef Var *(*LayerForwardFn)(Layer *layer, Var *x, TrainCtx *ctx);

struct Layer {
    const char *kind;               /* "residual_mlp", "gpt_block", ... */
    char name[LAYER_NAME_LEN];      /* scope of its nodes, e.g. "h.3" */
    LayerForwardFn forward;
    int n_params;
    Param params[LAYER_MAX_PARAMS]; /* owned: freed by layer_free */
};

/* Runs the layer on `x` with its nodes named under the layer's name. Returns a new Var
 * (caller owns) or NULL on error; `x` is borrowed. */
Var *layer_forward(Layer *layer, Var *x, TrainCtx *ctx);

/* Runs layers[0 .. n) one after another on `x` (borrowed), each intermediate freed as soon
 * as the next exists, so only what ops saved stays alive. Returns the last output (caller
 * owns) or NULL on error. */
Var *layers_forward(Layer **layers, int n, Var *x, TrainCtx *ctx);

/* For a concrete layer's create function: a zero-filled struct of `size` bytes (which
 * starts with its Layer) with kind, name (NULL: `kind`) and forward set. NULL on error. */
void *layer_alloc(size_t size, const char *kind, const char *name, LayerForwardFn forward);

/* Frees the layer and its parameters (and their gradients). NULL is a no-op. */
void layer_free(Layer *layer);

/* A new float32 parameter (MEM_PARAM, requires grad) named `name`, filled with
 * N(0, std²) draws from `rng` (std = 0: zeros; `fill` ≠ 0 with std = 0: that constant).
 * NULL on error. */
Var *param_create(const char *name, int ndim, const int *shape, float std, float fill, Pcg32 *rng);

/* Adds a parameter named "{layer name}.{suffix}" to a layer being built, created as
 * param_create does, with `decay` saying whether weight decay applies to it. The layer
 * owns it; it is returned borrowed. NULL on error (creation failed, or the layer already
 * has LAYER_MAX_PARAMS). */
Var *layer_add_param(Layer *layer, const char *suffix, bool decay, int ndim, const int *shape,
                     float std, float fill, Pcg32 *rng);

/* ---- the MLP chain's layer ----------------------------------------------------------- */

/* A residual block y = x + relu(x·W + b), with W (width, width) drawn from N(0, std²) and
 * b = 0. Tags: "mlp.fc", "mlp.relu", "mlp.residual". NULL on error. */
Layer *residual_mlp_create(const char *name, int width, float std, Pcg32 *rng);

/* ---- the GPT's block (layers_gpt.c) -------------------------------------------------- */

/* How a GPT block computes its attention core: primitive ops that materialise the
 * (B,H,T,T) scores and probabilities (naive), or one fused op that keeps O(T) per head
 * and recomputes the probabilities in backward (fused, op_attention_fused). */
typedef enum AttentionKind { ATTENTION_NAIVE = 0, ATTENTION_FUSED } AttentionKind;

/* "naive", "fused": the names of AttentionKind's values. */
extern const NameTable ATTENTION_KIND_NAMES;

/* Its name in ATTENTION_KIND_NAMES. */
const char *attention_kind_name(AttentionKind kind);

/* The op instance of dropout site `site` of GPT block `index`: the embedding's dropout is
 * instance 0, and block i's attention dropout, residual dropout after the attention and
 * dropout after the MLP are 1 + 3i, 2 + 3i and 3 + 3i. A function of the model's
 * structure alone, so every forward and every replay of a block uses the same ones. */
enum { GPT_SITE_ATTN = 0, GPT_SITE_ATTN_RESID = 1, GPT_SITE_MLP = 2, GPT_SITES_PER_BLOCK = 3 };
#define GPT_DROPOUT_EMBED 0u
#define GPT_DROPOUT_SITE(index, site) (1u + (uint32_t)GPT_SITES_PER_BLOCK * (uint32_t)(index) + (uint32_t)(site))

/* A pre-LayerNorm GPT-2 block on x (B,T,C), with H heads of D = C/H:
 *   x = x + resid_dropout(attn.c_proj(attention(ln_1(x))))
 *   x = x + dropout(mlp.c_proj(gelu(mlp.c_fc(ln_2(x)))))
 * Attention is causal, built from tagged primitive ops (the tags are listed in
 * layers_gpt.c), with dropout on the attention weights too; all three dropouts use `p`
 * = `dropout` and the TrainCtx's generator when it is training (a NULL ctx: inference).
 * `index` is the block's place in the chain (0 for h.0): its dropouts are op instances
 * GPT_DROPOUT_SITE(index, site) for the counter-based generator. With `attention`
 * ATTENTION_FUSED, attn.scores, attn.softmax, attn.dropout and attn.out are one op tagged
 * attn.fused, whose dropout (when training with dropout > 0) must be counter-based: a
 * forward with the stream fails, saying so.
 * Parameters are named and laid out as Hugging Face GPT-2's ("h.3.attn.c_attn.weight",
 * weights stored [in, out]) and initialised as GPT-2: weights N(0, 0.02²), the two
 * c_proj weights N(0, (0.02/sqrt(2·n_layers))²) so the residual stream's variance does
 * not grow with depth, biases 0, LayerNorm weights 1. Weight decay applies to the four
 * 2-D weights only. LayerNorm eps is 1e-5. Draws the initial values from `init`.
 * NULL on error: C, H or n_layers not positive, C not a multiple of H, dropout outside
 * [0, 1), or the memory budget. */
Layer *gpt_block_create(const char *name, int index, int C, int H, float dropout, AttentionKind attention,
                        int n_layers, Pcg32 *init);

/* Switches a GPT block's attention core to `attention` (its parameters serve both), so a
 * bench can run one model both ways. REMAT_EINVAL if `layer` is not a GPT block. */
RematStatus gpt_block_set_attention(Layer *layer, AttentionKind attention);

#endif /* REMAT_LAYERS_H */
