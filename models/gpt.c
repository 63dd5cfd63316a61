/*
 * gpt.c — the char-level GPT as a Model, and sampling text from it (see gpt.h).
 *
 * The model adds to the chain of blocks only what sits around it: the token and position
 * tables (wte, wpe) of the embed stage, and the final LayerNorm (ln_f) of the head. The
 * LM head has no weight of its own: logits = ln_f(x) · wte^T, one op_matmul with the
 * token table transposed (GPT-2's weight tying).
 */
#include "models/gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/kernels.h"
#include "autograd/ops.h"

#define GPT_LN_EPS 1e-5f   /* GPT-2's layer_norm_epsilon */
#define GPT_INIT_STD 0.02f /* GPT-2's initializer_range */

typedef struct Gpt {
    Model base; /* first: a Gpt * is a Model * */
    GptConfig config;
    Var *wte;         /* (V,C) token table, also the LM head; owned */
    Var *wpe;         /* (seq_len,C) position table; owned */
    Var *ln_f_weight; /* (C); owned */
    Var *ln_f_bias;   /* (C); owned */
} Gpt;

/* ---- the stages ----------------------------------------------------------------------- */

/* ids (B,T) → dropout(wte[ids] + wpe[0..T)), (B,T,C). */
static Var *gpt_embed(Model *model, Var *ids, TrainCtx *ctx)
{
    Gpt *g = (Gpt *)model;
    const Tensor *in = ids->value;
    if (in->dtype != DTYPE_I32 || in->ndim != 2) {
        char shape[48];
        remat_fail(REMAT_EINVAL, "gpt: the input must be int32 token ids of shape (B,T), got %s %s",
                   in->dtype == DTYPE_I32 ? "int32" : "non-int32", tensor_shape_str(shape, sizeof shape, in));
        return NULL;
    }
    if (in->shape[1] > g->config.seq_len) {
        remat_fail(REMAT_EINVAL, "gpt: a sequence of %d tokens is longer than the model's seq_len %d",
                   in->shape[1], g->config.seq_len);
        return NULL;
    }
    Var *x = op_embedding(ids, g->wte, g->wpe, "embd");
    Var *out = dropout_apply(x, g->config.dropout, ctx, GPT_DROPOUT_EMBED, "embd.dropout");
    var_free(x);
    return out;
}

/* x_L (B,T,C) → logits (B,T,V) = ln_f(x_L) · wte^T. */
static Var *gpt_logits(const Gpt *g, Var *x)
{
    Var *h = op_layernorm(x, g->ln_f_weight, g->ln_f_bias, GPT_LN_EPS, "ln_f");
    Var *logits = op_matmul(h, g->wte, CblasTrans, 1.0f, "lm_head");
    var_free(h);
    return logits;
}

/* x_L and targets (B,T) → mean cross-entropy of the next-token predictions. */
static Var *gpt_head(Model *model, Var *x, Var *targets, TrainCtx *ctx)
{
    (void)ctx; /* the head has no dropout */
    Var *logits = gpt_logits((Gpt *)model, x);
    Var *loss = op_cross_entropy(logits, targets, "loss");
    var_free(logits);
    return loss;
}

static void gpt_free_extra(Model *model)
{
    Gpt *g = (Gpt *)model;
    var_free(g->wte);
    var_free(g->wpe);
    var_free(g->ln_f_weight);
    var_free(g->ln_f_bias);
}

/* ---- creation ------------------------------------------------------------------------- */

static RematStatus check_config(const GptConfig *c)
{
    if (!c) return remat_fail(REMAT_EINVAL, "gpt: config is NULL");
    if (c->n_layers < 1 || c->d_model < 1 || c->n_heads < 1 || c->seq_len < 1 || c->vocab < 1)
        return remat_fail(REMAT_EINVAL, "gpt: n_layers, d_model, n_heads, seq_len and vocab must all "
                          "be > 0, got %d, %d, %d, %d and %d", c->n_layers, c->d_model, c->n_heads,
                          c->seq_len, c->vocab);
    if (c->d_model % c->n_heads != 0)
        return remat_fail(REMAT_EINVAL, "gpt: d_model %d is not a multiple of n_heads %d",
                          c->d_model, c->n_heads);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return remat_fail(REMAT_EINVAL, "gpt: dropout must be in [0, 1), got %g", (double)c->dropout);
    return REMAT_OK;
}

Model *gpt_create(const GptConfig *config)
{
    if (check_config(config) != REMAT_OK) return NULL;
    const int L = config->n_layers, C = config->d_model;
    Gpt *g = calloc(1, sizeof *g);
    Layer **layers = calloc((size_t)L, sizeof *layers);
    if (!g || !layers) {
        free(g);
        free(layers);
        remat_fail(REMAT_ENOMEM, "gpt: no memory for a model of %d layers", L);
        return NULL;
    }
    Model *m = &g->base;
    m->kind = "gpt";
    m->layers = layers;
    m->embed = gpt_embed;
    m->head = gpt_head;
    m->free_extra = gpt_free_extra;
    g->config = *config;

    /* Parameters are drawn in file order: wte, wpe, the blocks, ln_f. */
    Pcg32 init;
    pcg32_seed(&init, config->seed, 1);
    g->wte = param_create("wte.weight", 2, (int[]){config->vocab, C}, GPT_INIT_STD, 0.0f, &init);
    g->wpe = param_create("wpe.weight", 2, (int[]){config->seq_len, C}, GPT_INIT_STD, 0.0f, &init);
    if (!g->wte || !g->wpe) goto failed;
    for (int i = 0; i < L; i++) {
        char name[LAYER_NAME_LEN];
        snprintf(name, sizeof name, "h.%d", i);
        m->layers[i] = gpt_block_create(name, i, C, config->n_heads, config->dropout, config->attention, L, &init);
        if (!m->layers[i]) goto failed;
        m->n_layers = i + 1;
    }
    g->ln_f_weight = param_create("ln_f.weight", 1, (int[]){C}, 0.0f, 1.0f, &init);
    g->ln_f_bias = param_create("ln_f.bias", 1, (int[]){C}, 0.0f, 0.0f, &init);
    if (!g->ln_f_weight || !g->ln_f_bias) goto failed;

    /* Weight decay on the 2-D tables (as GPT-2 training does), not on ln_f. */
    const Param embeddings[2] = {{g->wte, true}, {g->wpe, true}};
    const Param final_norm[2] = {{g->ln_f_weight, false}, {g->ln_f_bias, false}};
    if (model_collect_params(m, embeddings, 2, final_norm, 2) != REMAT_OK) goto failed;
    return m;

failed:
    model_free(m);
    return NULL;
}

double gpt_param_count(const GptConfig *config)
{
    const double C = config->d_model;
    /* A block: ln_1 and ln_2 (2C each), c_attn (C,3C)+3C, attn.c_proj (C,C)+C, c_fc
     * (C,4C)+4C, mlp.c_proj (4C,C)+C. */
    const double block = 12.0 * C * C + 13.0 * C;
    return (config->vocab + config->seq_len) * C + config->n_layers * block + 2.0 * C;
}

const GptConfig *gpt_config(const Model *model)
{
    if (!model || !model->kind || strcmp(model->kind, "gpt") != 0) return NULL;
    return &((const Gpt *)model)->config;
}

RematStatus gpt_set_attention(Model *model, AttentionKind attention)
{
    if (!gpt_config(model)) return remat_fail(REMAT_EINVAL, "gpt_set_attention: the model is not a GPT");
    for (int i = 0; i < model->n_layers; i++)
        if (gpt_block_set_attention(model->layers[i], attention) != REMAT_OK) return remat_last_status();
    ((Gpt *)model)->config.attention = attention;
    return REMAT_OK;
}

/* ---- generation ----------------------------------------------------------------------- */

/* The logits (1,T,V) of the last T tokens of `window`, with grad mode already off and
 * dropout off (NULL ctx). NULL on error. */
static Var *window_logits(Gpt *g, const int32_t *window, int T)
{
    Tensor *t = tensor_create_typed(MEM_ACT, DTYPE_I32, 2, (int[]){1, T});
    if (!t) return NULL;
    memcpy(t->i32, window, (size_t)T * sizeof *window);
    Var *ids = var_create(t, false, "ids");
    Var *x = ids ? gpt_embed(&g->base, ids, NULL) : NULL;
    var_free(ids);
    for (int i = 0; i < g->base.n_layers && x; i++) {
        Var *next = layer_forward(g->base.layers[i], x, NULL);
        var_free(x);
        x = next;
    }
    Var *logits = x ? gpt_logits(g, x) : NULL;
    var_free(x);
    return logits;
}

/* Picks the next token from one row of V logits. `scratch` holds 2·V floats. */
static int32_t pick_token(const float *logits, int V, float temperature, Pcg32 *rng, float *scratch)
{
    if (temperature == 0.0f) return k_argmax(logits, V);
    float *scaled = scratch, *probs = scratch + V;
    k_scale(scaled, logits, 1.0f / temperature, (size_t)V);
    k_softmax_forward(probs, scaled, 1, V);
    return k_sample_categorical(probs, V, pcg32_float(rng));
}

RematStatus gpt_generate(Model *model, const int32_t *prompt, int n_prompt, int n_new,
                         float temperature, Pcg32 *rng, int32_t *out)
{
    const GptConfig *config = gpt_config(model);
    if (!config) return remat_fail(REMAT_EINVAL, "gpt_generate: the model is not a GPT");
    if (!prompt || n_prompt < 1 || n_new < 0 || (n_new > 0 && !out))
        return remat_fail(REMAT_EINVAL, "gpt_generate: need a prompt of at least 1 token, n_new >= 0 "
                          "and an output array, got %d prompt tokens and n_new = %d", n_prompt, n_new);
    if (!(temperature >= 0.0f) || isinf(temperature) || (temperature > 0.0f && !rng))
        return remat_fail(REMAT_EINVAL, "gpt_generate: temperature must be finite and >= 0 (and "
                          "sampling needs a generator), got %g%s", (double)temperature,
                          rng ? "" : " and no generator");
    const int V = config->vocab, S = config->seq_len;
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= V)
            return remat_fail(REMAT_EINVAL, "gpt_generate: prompt token %d at %d is outside [0, %d)",
                              (int)prompt[i], i, V);
    if (n_new == 0) return REMAT_OK;

    /* The token history is bookkeeping, not tensor data: plain host memory. */
    int32_t *tokens = malloc(((size_t)n_prompt + (size_t)n_new) * sizeof *tokens);
    if (!tokens) return remat_fail(REMAT_ENOMEM, "gpt_generate: no memory for %d tokens", n_prompt + n_new);
    Tensor *scratch = tensor_create(MEM_WORK, 1, (int[]){2 * V}); /* scaled logits, probabilities */
    if (!scratch) {
        free(tokens);
        return remat_last_status();
    }
    memcpy(tokens, prompt, (size_t)n_prompt * sizeof *tokens);

    Gpt *g = (Gpt *)model;
    bool was = grad_set_enabled(false);
    RematStatus status = REMAT_OK;
    for (int i = 0; i < n_new; i++) {
        const int length = n_prompt + i, T = length < S ? length : S;
        Var *logits = window_logits(g, tokens + length - T, T);
        if (!logits) {
            status = remat_last_status();
            break;
        }
        const float *last = logits->value->f32 + (size_t)(T - 1) * V; /* the last position's row */
        tokens[length] = out[i] = pick_token(last, V, temperature, rng, scratch->f32);
        var_free(logits);
    }
    grad_set_enabled(was);
    tensor_free(scratch);
    free(tokens);
    return status;
}
