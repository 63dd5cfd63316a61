/*
 * gpt.h — the char-level GPT: a GPT-2-style transformer over byte tokens.
 *
 *     ids (B,T) ──embedding: wte[id] + wpe[t]──▶ dropout ──▶ x_0          (embed stage)
 *     x_0 ──block h.0──▶ ... ──block h.{L−1}──▶ x_L                      (the chain)
 *     x_L ──ln_f──▶ · wte^T (the LM head, tied to the token table) ──▶ logits (B,T,V)
 *         ──cross-entropy with targets (B,T)──▶ loss                      (head stage)
 *
 * It is a Model (model.h), so checkpoint strategies work on its chain of blocks exactly as
 * on the MLP's layers. Blocks are pre-LayerNorm GPT-2 blocks (gpt_block_create in gpt.c);
 * parameter names and layouts are Hugging Face GPT-2's, in its order:
 * wte.weight (V,C), wpe.weight (seq_len,C), h.0.ln_1.weight, ..., h.{L−1}.mlp.c_proj.bias,
 * ln_f.weight, ln_f.bias. There is no separate lm_head.weight: the head reuses wte, so
 * wte's gradient is the sum of what the embedding and the head send it.
 *
 * What it is not: a tokenizer (a token is a byte: models/data.h), a KV cache, or a
 * pretrained GPT-2 loader (the sizes are a student's, the names are compatible).
 */
#ifndef REMAT_GPT_H
#define REMAT_GPT_H

#include <stdint.h>

#include "base/parse.h"
#include "models/model.h"

/* How a GPT block computes its attention core: primitive ops that materialise the
 * (B,H,T,T) scores and probabilities (naive), or one fused op that keeps O(T) per head
 * and recomputes the probabilities in backward (fused, op_attention_fused). */
typedef enum AttentionKind { ATTENTION_NAIVE = 0, ATTENTION_FUSED } AttentionKind;

/* "naive", "fused": the names of AttentionKind's values. */
extern const NameTable ATTENTION_KIND_NAMES;

/* The op instance of dropout site `site` of GPT block `index`, a key of the counter-based
 * generator: the embedding's dropout is instance 0, and block i's attention dropout,
 * residual dropout after the attention and dropout after the MLP are 1 + 3i, 2 + 3i and
 * 3 + 3i. A function of the model's structure alone, so every forward and every replay of
 * a block, by any strategy, uses the same ones. */
enum { GPT_SITE_ATTN = 0, GPT_SITE_ATTN_RESID = 1, GPT_SITE_MLP = 2, GPT_SITES_PER_BLOCK = 3 };
#define GPT_DROPOUT_EMBED 0u
#define GPT_DROPOUT_SITE(index, site) (1u + (uint32_t)GPT_SITES_PER_BLOCK * (uint32_t)(index) + (uint32_t)(site))

typedef struct GptConfig {
    int n_layers;  /* L ≥ 1 blocks */
    int d_model;   /* C ≥ 1, a multiple of n_heads */
    int n_heads;   /* H ≥ 1 */
    int seq_len;   /* the longest sequence: rows of wpe, T ≤ seq_len */
    int vocab;     /* V: 256 for byte tokens (TEXT_VOCAB_SIZE in data.h) */
    float dropout; /* p in [0, 1) for every dropout (embeddings, attention, residuals) */
    AttentionKind attention; /* naive (default) or fused attention cores */
    uint64_t seed; /* the initial parameters */
} GptConfig;

/* A GPT with freshly initialised parameters (GPT-2's init: N(0, 0.02²) weights and
 * embeddings, residual projections scaled by 1/sqrt(2·L), zero biases, unit LayerNorms),
 * drawn from PCG32 seeded with config->seed. The Model's input is an int32 Var of token
 * ids (B,T) without grad, T ≤ seq_len; its targets an int32 Var (B,T) of the next tokens.
 * Dropout is active when the TrainCtx says training. The caller owns the model
 * (model_free). NULL on error: a bad config (every size > 0, d_model a multiple of
 * n_heads, dropout in [0, 1); the message says which), or the memory budget. */
Model *gpt_create(const GptConfig *config);

/* The parameters (floats) gpt_create would make for `config`, computed without making
 * them: V·C + T·C (embeddings) + L·(12·C² + 13·C) (blocks) + 2·C (ln_f). In double, so
 * that no size overflows. */
double gpt_param_count(const GptConfig *config);

/* What model_profile measures on a step of `batch` sequences of seq_len tokens, dropout
 * as `ctx` says (NULL: none), with the figures of `policy` (NULL: none) and, with `ops`,
 * the op-level model (model_profile's for PLANNER_OPS), from the shapes alone
 * (checkpoint/cost.h: chain_model); its fixed memory has every gradient and no
 * optimizer state. The caller owns it (chain_cost_free). NULL on error: a bad config or
 * batch, fused attention dropping out with the stream generator. */
ChainCost *gpt_chain_model(const GptConfig *config, int batch, const TrainCtx *ctx, const Policy *policy, bool ops);

/* The config `model` was created with; NULL if it is not a GPT. */
const GptConfig *gpt_config(const Model *model);

/* Switches every block of a GPT to attention cores of `attention` (the parameters serve
 * both, so the model computes the same function either way, up to float32 rounding).
 * REMAT_EINVAL if `model` is not a GPT. */
RematStatus gpt_set_attention(Model *model, AttentionKind attention);

/* Gives block i of a GPT heads[i] heads (n_layers counts, each ≥ 1 and dividing d_model):
 * new blocks, drawn from PCG32 seeded with `seed`, replace the old ones, and model->params
 * lists the new blocks' parameters; the embeddings and ln_f stay. The config keeps its
 * n_heads, no longer every block's. On error (REMAT_EINVAL: not a GPT, a bad head count;
 * the memory budget) the model stays as it was. */
RematStatus gpt_set_heads(Model *model, const int *heads, uint64_t seed);

/* Generates n_new tokens after `prompt` (n_prompt ≥ 1 tokens, each in [0, V)) and writes
 * them to out[0..n_new). Each step runs the model on the last min(length, seq_len) tokens
 * (a full recomputation, no cache) with grad mode off and dropout off, and picks the next
 * token from the last position's logits: with temperature > 0 a draw from
 * softmax(logits/temperature) using one pcg32_float from `rng`; with temperature 0 the
 * most likely token (rng may then be NULL). The same model, prompt and generator state
 * give the same tokens. Uses a little MEM_ACT while it runs and leaves none.
 * On error returns the status (REMAT_EINVAL for bad arguments, or the budget's) and the
 * contents of `out` are unspecified. */
RematStatus gpt_generate(Model *model, const int32_t *prompt, int n_prompt, int n_new,
                         float temperature, Pcg32 *rng, int32_t *out);

#endif /* REMAT_GPT_H */
