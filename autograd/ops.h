/*
 * ops.h — the differentiable ops, in families (one file each, forward and backward side
 * by side):
 *
 *   ops_linear.c      linear (x·W + b), matmul (batched, for attention), add
 *   ops_activation.c  relu, gelu
 *   ops_norm.c        layernorm
 *   ops_attention.c   split_heads, merge_heads, causal_softmax, attention_fused
 *   ops_dropout.c     dropout (a PCG32 stream's mask, saved; or a counter-based one, regenerated)
 *   ops_embedding.c   embedding (token and position)
 *   ops_loss.c        mse, softmax + cross-entropy (fused)
 *
 * Every op takes its inputs (Vars), then weights, then sizes and options, and last a
 * `tag` naming its role ("mlp.fc", "attn.softmax": what selective checkpoint policies
 * match on; NULL for none). It returns a new Var the caller owns, or NULL on error with
 * remat_last_error() set: a NULL input (an earlier op failed), a shape mismatch, the
 * memory budget. A failing op changes nothing. So a layer can chain ops and check once.
 *
 * Shapes use these letters: N rows (any leading dims flattened), B batch, T time,
 * C channels, H heads, D = C/H head size, V vocabulary, IN/OUT a linear's widths.
 *
 * Element types: everything is float32 but token ids and targets (int32) and dropout
 * masks (uint8, kept internally). Int32 inputs never get a gradient.
 */
#ifndef REMAT_OPS_H
#define REMAT_OPS_H

#include <cblas.h>

#include "autograd/autograd.h"
#include "autograd/train_ctx.h"

/* ---- ops_linear.c ------------------------------------------------------------------- */

/* out (..., OUT) = x (..., IN) · weight (IN, OUT) + bias (OUT). The weight is stored
 * [in, out], as Hugging Face GPT-2's Conv1D. bias may be NULL. Saves x and weight. */
Var *op_linear(Var *x, Var *weight, Var *bias, const char *tag);

/* out = alpha · a · op(b), batched over leading dims.
 * a is (batch..., M, K). b is (batch..., K, N), or (batch..., N, K) with transB =
 * CblasTrans; or b is 2-D and shared by every batch element (then a's rows are flattened).
 * out is (batch..., M, N). Saves a and b. */
Var *op_matmul(Var *a, Var *b, CBLAS_TRANSPOSE transB, float alpha, const char *tag);

/* out = a + b, same shape. Saves nothing. */
Var *op_add(Var *a, Var *b, const char *tag);

/* ---- ops_activation.c --------------------------------------------------------------- */

/* out = max(x, 0). Saves its output (the next linear usually saves the same tensor). */
Var *op_relu(Var *x, const char *tag);

/* GELU, tanh approximation (GPT-2). Saves its input. */
Var *op_gelu(Var *x, const char *tag);

/* ---- ops_norm.c --------------------------------------------------------------------- */

/* LayerNorm over the last dim: out (N, C) = (x − mean)·rstd·weight + bias per row, with
 * mean and rstd = 1/sqrt(var + eps) of the row (biased variance, as PyTorch; GPT-2 uses
 * eps = 1e-5). x is (..., C); weight and bias are (C). Saves x, weight and the mean and
 * rstd it computed (N floats each): the backward then needs no second pass to find them. */
Var *op_layernorm(Var *x, Var *weight, Var *bias, float eps, const char *tag);

/* ---- ops_attention.c ---------------------------------------------------------------- */

/* Which third of the fused projection qkv (B,T,3C) op_split_heads takes. */
typedef enum QkvPart { QKV_Q = 0, QKV_K = 1, QKV_V = 2 } QkvPart;

/* Part `which` of qkv (B,T,3C), cut into H heads: out (B,H,T,D) with D = C/H, so that
 * each head's (T,D) block is contiguous for the batched matmuls. C must be a multiple of
 * H. Saves nothing (its backward is a copy back). */
Var *op_split_heads(Var *qkv, QkvPart which, int H, const char *tag);

/* The inverse layout: y (B,H,T,D) → out (B,T,C), C = H·D, heads side by side.
 * Saves nothing. */
Var *op_merge_heads(Var *y, const char *tag);

/* Causal softmax over attention scores (..., T, T): row t is a softmax over columns 0..t
 * (a query sees only keys up to itself); the later columns of out are exactly 0. The
 * causal mask is applied here, so the scores need no −inf fill. Saves its output. */
Var *op_causal_softmax(Var *scores, const char *tag);

/* Causal attention as one op: out (B,H,T,D) = softmax(q·kᵀ/sqrt(D), row t seeing keys
 * 0..t) ⊙ keep/(1 − p) · v, for q, k, v (B,H,T,D) of one shape, without a (T,T) tensor
 * (tensor/kernels_attention.c). Its dropout is as op_dropout's, while `ctx` trains and
 * p > 0: counter-based with the key of `site` at the index the (B,H,T,T) probabilities
 * would have, so an unfused attention whose dropout has the same site drops the same
 * elements; a context that draws from the stream is then an error (a running stream's
 * mask would have to be stored). Saves q, k, v, its output and the rows' log-sum-exp
 * (B,H,T) — outputs 0 and 1, through ops_output, so a selective policy can keep them —
 * and nothing of size T²; its backward recomputes the probabilities (and the mask),
 * counting that work as RECOMPUTE FLOPs. Hooks hear of the probabilities and the mask
 * through op_hooks_regenerated. */
Var *op_attention_fused(Var *q, Var *k, Var *v, float p, const TrainCtx *ctx, uint32_t site, const char *tag);

/* ---- ops_dropout.c ------------------------------------------------------------------ */

/* Inverted dropout as the training context `ctx` says (train_ctx.h): out = x·mask/(1 − p),
 * p in [0, 1). When ctx is NULL or not training, or when p is 0, it is the identity: it
 * draws nothing, records nothing, and returns a new reference to x itself (var_retain).
 * Training, the mask comes from the context's generator:
 *   - the stream: mask[i] = 1 (keep) when the i-th draw of ctx->rng (pcg32_float) is ≥ p.
 *     It draws exactly numel(x) numbers, so ctx->rng moves on by exactly that many, and
 *     saves ONLY the uint8 mask (one byte per element). On error ctx->rng is left as it was.
 *   - the counter: mask[i] = 1 when draw i (counter_rng.h) is ≥ p, a pure function of the
 *     key (ctx->seed, ctx->step, ctx->micro_batch, `site`) and i. Saves NOTHING: the node
 *     keeps the key and its backward makes the mask again, counting those compares as
 *     RECOMPUTE FLOPs; hooks hear of the mask through op_hooks_regenerated. A tensor of
 *     more than COUNTER_RNG_MAX_ELEMENTS is an error.
 * `site` names the dropout site in the model and must be the same every time that site
 * runs — in the first forward and in any replay — and differ between sites: a model
 * numbers its sites from its structure (models/gpt.h says how the GPT does). */
Var *op_dropout(Var *x, float p, TrainCtx *ctx, uint32_t site, const char *tag);

/* ---- ops_embedding.c ---------------------------------------------------------------- */

/* out (B,T,C) = wte[ids[b,t]] + wpe[t]. ids is an int32 (B,T) Var (no gradient) whose
 * values must be in [0, V): an id outside is an error naming it and its position.
 * wte is (V,C); wpe is (T_max,C) with T ≤ T_max, or NULL for no position table. The
 * gradient of both tables is a scatter-add (k_embedding_backward). Saves ids. */
Var *op_embedding(Var *ids, Var *wte, Var *wpe, const char *tag);

/* ---- ops_loss.c --------------------------------------------------------------------- */

/* Mean squared error: out (1) = mean over all elements of (pred − target)². target is a
 * Var without grad. Saves pred and target. */
Var *op_mse(Var *pred, Var *target, const char *tag);

/* Softmax + cross-entropy, fused: out (1) = mean over the N rows of
 * −log softmax(logits_r)[target_r]. logits is (..., V) float32; targets is an int32 Var
 * with logits' leading dims (N elements in all), each in [0, V). The probabilities are
 * never stored: the backward recomputes them from the logits. Saves logits and targets. */
Var *op_cross_entropy(Var *logits, Var *targets, const char *tag);

#endif /* REMAT_OPS_H */
