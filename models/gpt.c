/*
 * gpt.c — the char-level GPT whole: embedding, blocks, head, and sampling (see gpt.h).
 *
 * One forward, top to bottom, with B the batch, T the sequence, C the model width, H the
 * heads of D = C/H, V the vocabulary and L the blocks:
 *
 *   embd                 wte[ids] + wpe[0..T)                     (B,T,C)
 *   embd.dropout
 *   then, in each block h.i (pre-LayerNorm GPT-2), its nodes named "h.i.{tag}":
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
 *   and after the chain:
 *   ln_f                 the final LayerNorm                      (B,T,C)
 *   lm_head              · wte^T (the token table, tied)          (B,T,V)
 *   loss                 cross-entropy with the next tokens       (1)
 *
 * Tags are what selective checkpoint policies match on; each intermediate Var is freed as
 * then_free (autograd/layers.h) says. What it is not: a block with options beyond its
 * attention core's two forms (no bias-free variant, no rotary embeddings, no KV cache).
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

/* A weight and its bias (a block's are borrowed from the layer's params). */
typedef struct WeightBias {
    Var *weight, *bias;
} WeightBias;

typedef struct GptBlock {
    Layer base;
    const GptConfig *config; /* the model's (borrowed): its width, dropout and attention core */
    int index;               /* its place in the chain: numbers its dropout sites */
    int H;                   /* its heads: the config's, or what gpt_set_heads gave it */
    WeightBias ln_1;                     /* (C), (C) */
    struct { WeightBias c_attn, c_proj; } attn; /* (C,3C),(3C); (C,C),(C) */
    WeightBias ln_2;                     /* (C), (C) */
    struct { WeightBias c_fc, c_proj; } mlp;    /* (C,4C),(4C); (4C,C),(C) */
} GptBlock;

typedef struct Gpt {
    Model base; /* first: a Gpt * is a Model * */
    GptConfig config;
    Var *wte;         /* (V,C) token table, also the LM head; owned */
    Var *wpe;         /* (seq_len,C) position table; owned */
    WeightBias ln_f;  /* (C), (C); owned */
} Gpt;

/* ---- the forward: embedding ------------------------------------------------------------ */

/* ids (B,T) → dropout(wte[ids] + wpe[0..T)), (B,T,C). */
static Var *gpt_embed(Model *model, Var *ids, TrainCtx *ctx)
{
    Gpt *g = (Gpt *)model;
    const Tensor *in = ids->value;
    char shape[48];
    if (in->dtype != DTYPE_I32 || in->ndim != 2)
        return remat_fail_null(REMAT_EINVAL, "gpt: the input must be int32 token ids of shape (B,T), got %s %s",
                               in->dtype == DTYPE_I32 ? "int32" : "non-int32",
                               tensor_shape_str(shape, sizeof shape, in));
    if (in->shape[1] > g->config.seq_len)
        return remat_fail_null(REMAT_EINVAL, "gpt: a sequence of %d tokens is longer than the model's seq_len %d",
                               in->shape[1], g->config.seq_len);
    Var *x = op_embedding(ids, g->wte, g->wpe, "embd");
    return then_free(op_dropout(x, g->config.dropout, ctx, GPT_DROPOUT_EMBED, "embd.dropout"), x);
}

/* ---- the forward: a block -------------------------------------------------------------- */

/* x1 = x + resid_dropout(attn.c_proj(causal self-attention(ln_1(x))));
 * out = x1 + dropout(mlp.c_proj(gelu(mlp.c_fc(ln_2(x1))))), (B,T,C). The attention core
 * is one fused op, or made from primitive ops: (B,H,T,T) scores, probabilities and their
 * dropout, times v. A block's dropouts are active only while training (a NULL ctx is
 * inference), each numbered by its site for the counter-based generator. The ops chain
 * with one NULL check at the end: an op given NULL passes the failure on (ops.h). */
static Var *gpt_block_forward(Layer *layer, Var *x, TrainCtx *ctx)
{
    const GptBlock *b = (const GptBlock *)layer;
    const GptConfig *c = b->config;
    Var *h = op_layernorm(x, b->ln_1.weight, b->ln_1.bias, GPT_LN_EPS, "attn.ln");
    Var *qkv = then_free(op_linear(h, b->attn.c_attn.weight, b->attn.c_attn.bias, "attn.qkv"), h);
    Var *q = op_split_heads(qkv, QKV_Q, b->H, "attn.split_q");
    Var *k = op_split_heads(qkv, QKV_K, b->H, "attn.split_k");
    Var *v = op_split_heads(qkv, QKV_V, b->H, "attn.split_v");
    var_free(qkv); /* the splits saved nothing: qkv is gone now */
    Var *y;
    if (c->attention == ATTENTION_FUSED) { /* its dropout keyed as attn.dropout's: both drop the same */
        y = op_attention_fused(q, k, v, c->dropout, ctx, GPT_DROPOUT_SITE(b->index, GPT_SITE_ATTN), "attn.fused");
        var_free(q);
        var_free(k);
    } else {
        Var *scores = op_matmul(q, k, CblasTrans, 1.0f / sqrtf((float)(c->d_model / b->H)), "attn.scores");
        var_free(q);
        var_free(k);
        Var *att = then_free(op_causal_softmax(scores, "attn.softmax"), scores);
        Var *att_dropped = then_free(op_dropout(att, c->dropout, ctx, GPT_DROPOUT_SITE(b->index, GPT_SITE_ATTN),
                                                "attn.dropout"), att);
        y = then_free(op_matmul(att_dropped, v, CblasNoTrans, 1.0f, "attn.out"), att_dropped);
    }
    var_free(v);
    Var *merged = then_free(op_merge_heads(y, "attn.merge"), y);
    Var *attn_proj = then_free(op_linear(merged, b->attn.c_proj.weight, b->attn.c_proj.bias, "attn.proj"), merged);
    Var *attn = then_free(op_dropout(attn_proj, c->dropout, ctx, GPT_DROPOUT_SITE(b->index, GPT_SITE_ATTN_RESID),
                                     "attn.resid_dropout"), attn_proj);
    Var *x1 = then_free(op_add(x, attn, "attn.residual"), attn);

    h = op_layernorm(x1, b->ln_2.weight, b->ln_2.bias, GPT_LN_EPS, "mlp.ln");
    Var *fc = then_free(op_linear(h, b->mlp.c_fc.weight, b->mlp.c_fc.bias, "mlp.fc"), h);
    Var *act = then_free(op_gelu(fc, "mlp.gelu"), fc);
    Var *proj = then_free(op_linear(act, b->mlp.c_proj.weight, b->mlp.c_proj.bias, "mlp.proj"), act);
    Var *mlp = then_free(op_dropout(proj, c->dropout, ctx, GPT_DROPOUT_SITE(b->index, GPT_SITE_MLP), "mlp.dropout"),
                         proj);
    Var *out = op_add(x1, mlp, "mlp.residual");
    var_free(x1);
    var_free(mlp);
    return out;
}

/* ---- the forward: head ---------------------------------------------------------------- */

/* x_L (B,T,C) → logits (B,T,V) = ln_f(x_L) · wte^T; with targets (B,T), the mean
 * cross-entropy of the next-token predictions instead (NULL targets: sampling wants the
 * logits themselves). */
static Var *gpt_head(Model *model, Var *x, Var *targets, TrainCtx *ctx)
{
    (void)ctx; /* the head has no dropout */
    const Gpt *g = (const Gpt *)model;
    Var *h = op_layernorm(x, g->ln_f.weight, g->ln_f.bias, GPT_LN_EPS, "ln_f");
    Var *logits = then_free(op_matmul(h, g->wte, CblasTrans, 1.0f, "lm_head"), h);
    return targets ? then_free(op_cross_entropy(logits, targets, "loss"), logits) : logits;
}

/* ---- creation ------------------------------------------------------------------------- */

/* The block h.`index` of gpt_block_forward, with H heads, in the model of `config` (borrowed,
 * checked: check_config; a fused attention core fails a forward that drops out with the
 * stream generator). Parameters are named, laid out and initialised as Hugging Face
 * GPT-2's (gpt.h), drawn from `init`; weight decay on the four 2-D weights only. NULL on
 * error: H not positive or not dividing d_model, or the memory budget. */
static Layer *gpt_block_create(const GptConfig *config, int index, int H, Pcg32 *init)
{
    const int C = config->d_model;
    char name[LAYER_NAME_LEN];
    snprintf(name, sizeof name, "h.%d", index);
    if (H <= 0 || C % H != 0)
        return remat_fail_null(REMAT_EINVAL, "gpt: block %s of d_model %d cannot have %d heads: they must be > 0 "
                               "and divide it", name, C, H);
    /* GPT-2 scales the init of the projections into the residual stream by
     * 1/sqrt(2·n_layers): each block adds two of them to the stream. */
    const float std = GPT_INIT_STD, proj_std = GPT_INIT_STD / sqrtf(2.0f * (float)config->n_layers);
    /* In file order, each weight before its bias; LayerNorms start at weight 1, biases at 0,
     * and only the four matrices decay. */
    const ParamSpec params[] = {
        {"ln_1.weight", 1, {C}, .fill = 1.0f},                      {"ln_1.bias", 1, {C}, .fill = 0.0f},
        {"attn.c_attn.weight", 2, {C, 3 * C}, std, .decay = true},  {"attn.c_attn.bias", 1, {3 * C}, .fill = 0.0f},
        {"attn.c_proj.weight", 2, {C, C}, proj_std, .decay = true}, {"attn.c_proj.bias", 1, {C}, .fill = 0.0f},
        {"ln_2.weight", 1, {C}, .fill = 1.0f},                      {"ln_2.bias", 1, {C}, .fill = 0.0f},
        {"mlp.c_fc.weight", 2, {C, 4 * C}, std, .decay = true},     {"mlp.c_fc.bias", 1, {4 * C}, .fill = 0.0f},
        {"mlp.c_proj.weight", 2, {4 * C, C}, proj_std, .decay = true}, {"mlp.c_proj.bias", 1, {C}, .fill = 0.0f},
    };
    GptBlock *b = layer_create(sizeof *b, "gpt_block", name, gpt_block_forward, params, 12, init);
    if (!b) return NULL;
    *b = (GptBlock){.base = b->base, .config = config, .index = index, .H = H};
    WeightBias *named[] = {&b->ln_1, &b->attn.c_attn, &b->attn.c_proj, &b->ln_2, &b->mlp.c_fc, &b->mlp.c_proj};
    for (int i = 0; i < 6; i++) *named[i] = (WeightBias){b->base.params[2 * i].var, b->base.params[2 * i + 1].var};
    return &b->base;
}

/* model->params in file order: wte, wpe, the blocks', ln_f; weight decay on the 2-D tables
 * (as GPT-2 training does), not on ln_f. */
static RematStatus collect_params(Gpt *g)
{
    const Param embeddings[2] = {{g->wte, true}, {g->wpe, true}};
    const Param final_norm[2] = {{g->ln_f.weight, false}, {g->ln_f.bias, false}};
    return model_collect_params(&g->base, embeddings, 2, final_norm, 2);
}

static void gpt_free_extra(Model *model)
{
    Gpt *g = (Gpt *)model;
    var_free(g->wte);
    var_free(g->wpe);
    var_free(g->ln_f.weight);
    var_free(g->ln_f.bias);
}

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
    Gpt *g = calloc(1, sizeof *g + (size_t)L * sizeof(Layer *)); /* the chain's array after the model */
    if (!g) return remat_fail_null(REMAT_ENOMEM, "gpt: no memory for a model of %d layers", L);
    Model *m = &g->base;
    *m = (Model){.kind = "gpt", .layers = (Layer **)(g + 1), .embed = gpt_embed, .head = gpt_head,
                 .free_extra = gpt_free_extra};
    g->config = *config;

    /* Parameters are drawn in file order: wte, wpe, the blocks, ln_f. */
    Pcg32 init;
    pcg32_seed(&init, config->seed, 1);
    g->wte = param_create("wte.weight", 2, (int[]){config->vocab, C}, GPT_INIT_STD, 0.0f, &init);
    g->wpe = param_create("wpe.weight", 2, (int[]){config->seq_len, C}, GPT_INIT_STD, 0.0f, &init);
    if (!g->wte || !g->wpe) goto failed;
    for (int i = 0; i < L; i++) {
        if (!(m->layers[i] = gpt_block_create(&g->config, i, config->n_heads, &init))) goto failed;
        m->n_layers = i + 1;
    }
    g->ln_f.weight = param_create("ln_f.weight", 1, (int[]){C}, 0.0f, 1.0f, &init);
    g->ln_f.bias = param_create("ln_f.bias", 1, (int[]){C}, 0.0f, 0.0f, &init);
    if (g->ln_f.weight && g->ln_f.bias && collect_params(g) == REMAT_OK) return m;

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
    ((Gpt *)model)->config.attention = attention; /* every block reads it there */
    return REMAT_OK;
}

RematStatus gpt_set_heads(Model *model, const int *heads, uint64_t seed)
{
    const GptConfig *c = gpt_config(model);
    if (!c) return remat_fail(REMAT_EINVAL, "gpt_set_heads: the model is not a GPT");
    const int L = model->n_layers;
    Layer **blocks = calloc((size_t)L, sizeof *blocks);
    if (!blocks) return remat_fail(REMAT_ENOMEM, "gpt_set_heads: no memory for %d blocks", L);
    Pcg32 init;
    pcg32_seed(&init, seed, 1);
    int made = 0;
    while (made < L && (blocks[made] = gpt_block_create(c, made, heads[made], &init))) made++;
    for (int i = 0; i < L; i++) { /* all new blocks in, the old ones freed; or the model as it was */
        Layer *old = made == L ? model->layers[i] : blocks[i];
        if (made == L) model->layers[i] = blocks[i];
        layer_free(old);
    }
    free(blocks);
    return made == L ? collect_params((Gpt *)model) : remat_last_status();
}

static const char *const ATTENTION_KINDS[] = {"naive", "fused"};
const NameTable ATTENTION_KIND_NAMES = {ATTENTION_KINDS, 2};

/* ---- the chain model: the step's ops as shapes ---------------------------------------- */

/* A stage's ops as chain_model walks them (checkpoint/cost.h), appended in the order the
 * forward above runs them; each append returns the value of the op's output. */
typedef struct Ops {
    ChainOp op[CHAIN_MAX_OPS];
    int n;
    uint64_t rows;          /* B·T */
    bool dropping, counter; /* dropout runs (training, p > 0); its masks from the counter (none saved) */
} Ops;

static int add_op(Ops *o, ChainOp op)
{
    o->op[o->n++] = op;
    return o->n;
}

/* An op of one input x, `cols` floats a row out. */
static int add_unary(Ops *o, const char *name, const char *tag, int x, unsigned saves, uint64_t cols, uint64_t flops)
{
    return add_op(o, (ChainOp){.name = name, .tag = tag, .in = {x, -1, -1}, .saves = saves,
                               .out = o->rows * cols * sizeof(float), .flops = flops});
}

/* op_layernorm keeps x, mean and rstd (a float a row each); op_linear its input. */
static int add_layernorm(Ops *o, const char *tag, int x, uint64_t C)
{
    return add_op(o, (ChainOp){.name = "layernorm", .tag = tag, .in = {x, -1, -1}, .saves = 1,
                               .out = o->rows * C * sizeof(float), .extra = 2 * o->rows * sizeof(float),
                               .extras = 2, .flops = o->rows * (7 * C + 5)});
}

static int add_linear(Ops *o, const char *tag, int x, uint64_t C, uint64_t OUT)
{
    return add_unary(o, "linear", tag, x, 1, OUT, 2 * o->rows * C * OUT + o->rows * OUT);
}

/* op_dropout on `numel` floats: the identity when not dropping; the stream's saves its byte
 * mask, the counter's nothing (its backward makes the mask again). */
static int add_dropout(Ops *o, const char *tag, int x, uint64_t numel)
{
    if (!o->dropping) return x;
    return add_op(o, (ChainOp){.name = "dropout", .tag = tag, .in = {x, -1, -1}, .out = numel * sizeof(float),
                               .extra = o->counter ? 0 : numel, .extras = 1, .flops = 2 * numel,
                               .recompute = o->counter ? numel : 0});
}

/* The attention core from q, k, v: naive, (B,H,T,T) scores and probabilities saved; or
 * fused, q, k, v, its output and a log-sum-exp per row saved, its probabilities made again
 * in backward (RECOMPUTE) with its dropout's masks. */
static int attention_core_ops(Ops *o, const GptConfig *c, int q, int k, int v)
{
    const uint64_t T = (uint64_t)c->seq_len, C = (uint64_t)c->d_model, BH = o->rows / T * (uint64_t)c->n_heads;
    const uint64_t D = C / (uint64_t)c->n_heads, S = BH * T * T, n = o->rows * C;
    if (c->attention == ATTENTION_FUSED) {
        ChainOp fused = {.name = "attention_fused", .tag = "attn.fused", .in = {q, k, v}, .saves = 7 | CHAIN_SAVES_OUT,
                         .out = n * sizeof(float), .extra = BH * T * sizeof(float), .extras = 1};
        fused.flops = k_attention_flops((int)BH, (int)T, (int)D, o->dropping, &ATTN_PLAN_DEFAULT, &fused.recompute);
        return add_op(o, fused);
    }
    const int scores = add_op(o, (ChainOp){.name = "matmul", .tag = "attn.scores", .in = {q, k, -1}, .saves = 3,
                                           .out = S * sizeof(float), .flops = 2 * S * D});
    const int att = add_op(o, (ChainOp){.name = "causal_softmax", .tag = "attn.softmax", .in = {scores, -1, -1},
                                        .saves = CHAIN_SAVES_OUT, .out = S * sizeof(float),
                                        .flops = 5 * (BH * T * (T + 1) / 2) + BH * T});
    return add_op(o, (ChainOp){.name = "matmul", .tag = "attn.out", .in = {add_dropout(o, "attn.dropout", att, S), v, -1},
                               .saves = 3, .out = n * sizeof(float), .flops = 2 * S * D});
}

/* gpt_block_forward, op for op (the letters of the top of the file). */
static void block_ops(Ops *o, const GptConfig *c)
{
    const uint64_t C = (uint64_t)c->d_model, n = o->rows * C;
    const int qkv = add_linear(o, "attn.qkv", add_layernorm(o, "attn.ln", 0, C), C, 3 * C);
    const int q = add_unary(o, "split_heads", "attn.split_q", qkv, 0, C, 0);
    const int k = add_unary(o, "split_heads", "attn.split_k", qkv, 0, C, 0);
    const int v = add_unary(o, "split_heads", "attn.split_v", qkv, 0, C, 0);
    const int y = attention_core_ops(o, c, q, k, v);
    const int merged = add_unary(o, "merge_heads", "attn.merge", y, 0, C, 0);
    const int attn = add_dropout(o, "attn.resid_dropout", add_linear(o, "attn.proj", merged, C, C), n);
    const int x1 = add_op(o, (ChainOp){.name = "add", .tag = "attn.residual", .in = {0, attn, -1},
                                       .out = n * sizeof(float), .flops = n});
    const int fc = add_linear(o, "mlp.fc", add_layernorm(o, "mlp.ln", x1, C), C, 4 * C);
    const int act = add_unary(o, "gelu", "mlp.gelu", fc, 1, 4 * C, 9 * 4 * n);
    const int mlp = add_dropout(o, "mlp.dropout", add_linear(o, "mlp.proj", act, 4 * C, C), n);
    add_op(o, (ChainOp){.name = "add", .tag = "mlp.residual", .in = {x1, mlp, -1}, .out = n * sizeof(float),
                        .flops = n});
}

ChainCost *gpt_chain_model(const GptConfig *config, int batch, const TrainCtx *ctx, const Policy *policy, bool ops)
{
    if (check_config(config) != REMAT_OK) return NULL;
    if (batch < 1) return remat_fail_null(REMAT_EINVAL, "gpt: the batch must be >= 1, got %d", batch);
    const uint64_t rows = (uint64_t)batch * (uint64_t)config->seq_len, C = (uint64_t)config->d_model, V = config->vocab;
    const bool dropping = ctx && ctx->training && config->dropout > 0.0f;
    const bool counter = dropping && ctx->dropout_rng == DROPOUT_RNG_COUNTER;
    const bool fused = config->attention == ATTENTION_FUSED;
    if (fused && dropping && !counter)
        return remat_fail_null(REMAT_EINVAL, "gpt: fused attention drops out only with the counter-based generator");
    Ops block = {.rows = rows, .dropping = dropping, .counter = counter}, embed = block, head = block;
    block_ops(&block, config);
    add_dropout(&embed, "embd.dropout", add_unary(&embed, "embedding", "embd", 0, 1, C, rows * C), rows * C);
    const int logits = add_unary(&head, "matmul", "lm_head", add_layernorm(&head, "ln_f", 0, C), 1, V,
                                 2 * rows * V * C);
    add_op(&head, (ChainOp){.name = "cross_entropy", .tag = "loss", .in = {logits, -1, -1}, .saves = 1,
                            .out = sizeof(float), .flops = rows * (4 * V + 4) + 1});
    const size_t a = rows * C * sizeof(float), ids = rows * sizeof(int32_t);
    const AttnPlan plan = ATTN_PLAN_DEFAULT; /* the fused op's scratch, made in its forward and its backward */
    const size_t work = fused ? k_attention_work_floats(config->seq_len, config->d_model / config->n_heads, &plan) : 0;
    return chain_model(&(ChainShape){.base = 2 * ids, .embed = {embed.op, embed.n, ids, false},
                                     .layer = {block.op, block.n, a, true}, .n_layers = config->n_layers,
                                     .head = {head.op, head.n, a, true}, .work_peak = work * sizeof(float),
                                     .fixed = (size_t)(2 * gpt_param_count(config) * sizeof(float)),
                                     .policy = policy, .ops = ops});
}

/* ---- generation ----------------------------------------------------------------------- */

/* The GPT `model`'s logits (1,T,V) of the last T tokens of `window`, with grad mode already
 * off and dropout off (NULL ctx). NULL on error. */
static Var *window_logits(Model *model, const int32_t *window, int T)
{
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){1, T});
    if (!t) return NULL;
    memcpy(t->i32, window, (size_t)T * sizeof *window);
    Var *ids = var_create(t, false, "ids");
    Var *x = then_free(ids ? gpt_embed(model, ids, NULL) : NULL, ids);
    Var *h = then_free(x ? layers_forward(model->layers, model->n_layers, x, NULL) : NULL, x);
    return then_free(h ? gpt_head(model, h, NULL, NULL) : NULL, h);
}

/* Picks the next token from one row of V logits, which it turns into probabilities in
 * place when it samples. */
static int32_t pick_token(float *logits, int V, float temperature, Pcg32 *rng)
{
    if (temperature == 0.0f) return k_argmax(logits, V);
    k_scale(logits, logits, 1.0f / temperature, (size_t)V);
    k_softmax_forward(logits, logits, 1, V, false);
    return k_sample_categorical(logits, V, pcg32_float(rng));
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
    memcpy(tokens, prompt, (size_t)n_prompt * sizeof *tokens);

    bool was = grad_set_enabled(false);
    RematStatus status = REMAT_OK;
    for (int i = 0; i < n_new && status == REMAT_OK; i++) {
        const int length = n_prompt + i, T = length < S ? length : S;
        Var *logits = window_logits(model, tokens + length - T, T);
        float *last = logits ? logits->value->f32 + (size_t)(T - 1) * V : NULL; /* the last row, unused after */
        if (last) tokens[length] = out[i] = pick_token(last, V, temperature, rng);
        else status = remat_last_status();
        var_free(logits);
    }
    grad_set_enabled(was);
    free(tokens);
    return status;
}
