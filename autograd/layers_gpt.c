/*
 * layers_gpt.c — the GPT-2 transformer block, composed from primitive ops (see layers.h).
 *
 * What it is: the pre-LayerNorm block of GPT-2, written as a plain sequence of ops, each
 * tagged with its role. Tags are what selective checkpoint policies match on, and nodes
 * are named "{block}.{tag}" ("h.3.attn.softmax"):
 *
 *   attn.ln              ln_1(x)                                  (B,T,C)
 *   attn.qkv             · c_attn + b                             (B,T,3C)
 *   attn.split_q/_k/_v   q, k, v cut into heads                   (B,H,T,D) each
 *   attn.scores          q · k^T / sqrt(D)                        (B,H,T,T)
 *   attn.softmax         causal softmax (the mask is applied here)
 *   attn.dropout         dropout on the attention weights
 *   attn.out             att · v                                  (B,H,T,D)
 *   attn.fused           instead of the four above, with fused attention: one op,
 *                        nothing of size T² kept                  (B,H,T,D)
 *   attn.merge           heads side by side                       (B,T,C)
 *   attn.proj            · attn.c_proj + b
 *   attn.resid_dropout
 *   attn.residual        x + that
 *   mlp.ln               ln_2
 *   mlp.fc               · c_fc + b                               (B,T,4C)
 *   mlp.gelu
 *   mlp.proj             · mlp.c_proj + b                         (B,T,C)
 *   mlp.dropout
 *   mlp.residual         x + that
 *
 * Each intermediate Var is freed as soon as the next op has consumed it, so all that
 * stays alive after the forward is what the ops saved for backward.
 * What it is not: a block with options beyond its attention core's two forms (no
 * bias-free variant, no rotary embeddings, no KV cache).
 */
#include "autograd/layers.h"

#include <math.h>
#include <stdio.h>

#include "autograd/ops.h"

#define GPT_LN_EPS 1e-5f   /* GPT-2's layer_norm_epsilon */
#define GPT_INIT_STD 0.02f /* GPT-2's initializer_range */

/* A weight and its bias, borrowed from the layer's params. */
typedef struct WeightBias {
    Var *weight, *bias;
} WeightBias;

typedef struct GptBlock {
    Layer base;
    int index; /* its place in the chain: numbers its dropout sites */
    AttentionKind attention;
    int C, H;
    float dropout;
    WeightBias ln_1;                     /* (C), (C) */
    struct { WeightBias c_attn, c_proj; } attn; /* (C,3C),(3C); (C,C),(C) */
    WeightBias ln_2;                     /* (C), (C) */
    struct { WeightBias c_fc, c_proj; } mlp;    /* (C,4C),(4C); (4C,C),(C) */
} GptBlock;

/* Dropout site `site` of this block as the context asks: active only while training (a
 * NULL ctx is inference). */
static Var *block_dropout(Var *x, const GptBlock *b, TrainCtx *ctx, int site, const char *tag)
{
    return dropout_apply(x, b->dropout, ctx, GPT_DROPOUT_SITE(b->index, site), tag);
}

/* The attention core from primitive ops: (B,H,T,T) scores, probabilities and their
 * dropout, times v. Takes q, k, v. */
static Var *attention_naive(const GptBlock *b, Var *q, Var *k, Var *v, TrainCtx *ctx)
{
    const int D = b->C / b->H;
    Var *scores = op_matmul(q, k, CblasTrans, 1.0f / sqrtf((float)D), "attn.scores");
    var_free(q);
    var_free(k);
    Var *att = op_causal_softmax(scores, "attn.softmax");
    var_free(scores);
    Var *att_dropped = block_dropout(att, b, ctx, GPT_SITE_ATTN, "attn.dropout");
    var_free(att);
    Var *y = op_matmul(att_dropped, v, CblasNoTrans, 1.0f, "attn.out");
    var_free(att_dropped);
    var_free(v);
    return y;
}

/* The attention core as one op, its dropout keyed as the naive path's attn.dropout would
 * be, so both drop the same probabilities. Takes q, k, v. */
static Var *attention_fused(const GptBlock *b, Var *q, Var *k, Var *v, TrainCtx *ctx)
{
    const bool dropping = ctx && ctx->training && b->dropout > 0.0f;
    Var *y = NULL;
    if (dropping && ctx->dropout_rng != DROPOUT_RNG_COUNTER) {
        remat_fail(REMAT_EINVAL, "%s: fused attention drops out with the counter-based generator, whose masks "
                   "need not be stored; this run draws from the stream (use --dropout-rng counter, or dropout 0)",
                   b->base.name);
    } else {
        const CounterKey key = dropping ? dropout_counter_key(ctx, GPT_DROPOUT_SITE(b->index, GPT_SITE_ATTN))
                                        : (CounterKey){0};
        y = op_attention_fused(q, k, v, dropping ? b->dropout : 0.0f, dropping ? &key : NULL, "attn.fused");
    }
    var_free(q);
    var_free(k);
    var_free(v);
    return y;
}

/* resid_dropout(attn.c_proj(causal self-attention(ln_1(x)))), (B,T,C). */
static Var *attention_branch(const GptBlock *b, Var *x, TrainCtx *ctx)
{
    Var *h = op_layernorm(x, b->ln_1.weight, b->ln_1.bias, GPT_LN_EPS, "attn.ln");
    Var *qkv = op_linear(h, b->attn.c_attn.weight, b->attn.c_attn.bias, "attn.qkv");
    var_free(h);
    Var *q = op_split_heads(qkv, QKV_Q, b->H, "attn.split_q");
    Var *k = op_split_heads(qkv, QKV_K, b->H, "attn.split_k");
    Var *v = op_split_heads(qkv, QKV_V, b->H, "attn.split_v");
    var_free(qkv); /* the splits saved nothing: qkv is gone now */
    Var *y = b->attention == ATTENTION_FUSED ? attention_fused(b, q, k, v, ctx) : attention_naive(b, q, k, v, ctx);
    Var *merged = op_merge_heads(y, "attn.merge");
    var_free(y);
    Var *proj = op_linear(merged, b->attn.c_proj.weight, b->attn.c_proj.bias, "attn.proj");
    var_free(merged);
    Var *out = block_dropout(proj, b, ctx, GPT_SITE_ATTN_RESID, "attn.resid_dropout");
    var_free(proj);
    return out;
}

/* dropout(mlp.c_proj(gelu(mlp.c_fc(ln_2(x))))), (B,T,C). */
static Var *mlp_branch(const GptBlock *b, Var *x, TrainCtx *ctx)
{
    Var *h = op_layernorm(x, b->ln_2.weight, b->ln_2.bias, GPT_LN_EPS, "mlp.ln");
    Var *fc = op_linear(h, b->mlp.c_fc.weight, b->mlp.c_fc.bias, "mlp.fc");
    var_free(h);
    Var *act = op_gelu(fc, "mlp.gelu");
    var_free(fc);
    Var *proj = op_linear(act, b->mlp.c_proj.weight, b->mlp.c_proj.bias, "mlp.proj");
    var_free(act);
    Var *out = block_dropout(proj, b, ctx, GPT_SITE_MLP, "mlp.dropout");
    var_free(proj);
    return out;
}

/* The ops chain without checks: an op given a NULL input (an earlier failure) returns
 * NULL and keeps that failure's message, so one NULL check at the end suffices. */
static Var *gpt_block_forward(Layer *layer, Var *x, TrainCtx *ctx)
{
    const GptBlock *b = (const GptBlock *)layer;
    Var *attn = attention_branch(b, x, ctx);
    Var *x1 = op_add(x, attn, "attn.residual");
    var_free(attn);
    Var *mlp = mlp_branch(b, x1, ctx);
    Var *out = op_add(x1, mlp, "mlp.residual");
    var_free(x1);
    var_free(mlp);
    return out;
}

RematStatus gpt_block_set_attention(Layer *layer, AttentionKind attention)
{
    if (!layer || layer->forward != gpt_block_forward)
        return remat_fail(REMAT_EINVAL, "gpt_block_set_attention: %s is not a GPT block", layer ? layer->name : "NULL");
    ((GptBlock *)layer)->attention = attention;
    return REMAT_OK;
}

/* Adds "{suffix}.weight" and "{suffix}.bias" to the block; false on error. */
static bool add_weight_bias(GptBlock *b, WeightBias *wb, const char *suffix, int ndim,
                            const int *shape, float std, Pcg32 *init)
{
    char name[LAYER_NAME_LEN + 24];
    const int out = shape[ndim - 1]; /* a linear's bias, or a LayerNorm's, has the last dim */
    const bool is_norm = ndim == 1;  /* LayerNorm: weight 1, no decay */
    snprintf(name, sizeof name, "%s.weight", suffix);
    wb->weight = layer_add_param(&b->base, name, !is_norm, ndim, shape, is_norm ? 0.0f : std,
                                 is_norm ? 1.0f : 0.0f, init);
    snprintf(name, sizeof name, "%s.bias", suffix);
    wb->bias = wb->weight ? layer_add_param(&b->base, name, false, 1, &out, 0.0f, 0.0f, init) : NULL;
    return wb->bias != NULL;
}

Layer *gpt_block_create(const char *name, int index, int C, int H, float dropout, AttentionKind attention,
                        int n_layers, Pcg32 *init)
{
    if (C <= 0 || H <= 0 || C % H != 0 || n_layers <= 0 || index < 0 || !init) {
        remat_fail(REMAT_EINVAL, "gpt_block_create: need C > 0 a multiple of H > 0, n_layers > 0, index >= 0 "
                   "and a generator, got C = %d, H = %d, n_layers = %d, index = %d%s", C, H, n_layers, index,
                   init ? "" : ", no generator");
        return NULL;
    }
    if (!(dropout >= 0.0f && dropout < 1.0f)) {
        remat_fail(REMAT_EINVAL, "gpt_block_create: dropout must be in [0, 1), got %g", (double)dropout);
        return NULL;
    }
    GptBlock *b = layer_alloc(sizeof *b, "gpt_block", name, gpt_block_forward);
    if (!b) return NULL;
    b->index = index;
    b->attention = attention;
    b->C = C;
    b->H = H;
    b->dropout = dropout;
    /* GPT-2 scales the init of the projections into the residual stream by
     * 1/sqrt(2·n_layers): each block adds two of them to the stream. */
    const float proj_std = GPT_INIT_STD / sqrtf(2.0f * (float)n_layers);
    bool ok = add_weight_bias(b, &b->ln_1, "ln_1", 1, (int[]){C}, 0.0f, init) &&
              add_weight_bias(b, &b->attn.c_attn, "attn.c_attn", 2, (int[]){C, 3 * C}, GPT_INIT_STD, init) &&
              add_weight_bias(b, &b->attn.c_proj, "attn.c_proj", 2, (int[]){C, C}, proj_std, init) &&
              add_weight_bias(b, &b->ln_2, "ln_2", 1, (int[]){C}, 0.0f, init) &&
              add_weight_bias(b, &b->mlp.c_fc, "mlp.c_fc", 2, (int[]){C, 4 * C}, GPT_INIT_STD, init) &&
              add_weight_bias(b, &b->mlp.c_proj, "mlp.c_proj", 2, (int[]){4 * C, C}, proj_std, init);
    if (!ok) {
        layer_free(&b->base);
        return NULL;
    }
    return &b->base;
}
