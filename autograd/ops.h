/*
 * ops.h — the differentiable ops, in families (one file each, forward and backward side
 * by side):
 *
 *   ops_linear.c      linear (x·W + b), matmul (batched, for attention), add
 *   ops_activation.c  relu, gelu
 *   ops_norm.c        layernorm
 *   ops_attention.c   split_heads, merge_heads, causal_softmax
 *   ops_dropout.c     dropout
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
 */
#ifndef REMAT_OPS_H
#define REMAT_OPS_H

#include <cblas.h>

#include "autograd.h"
#include "rng.h"

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

/* ---- ops_loss.c --------------------------------------------------------------------- */

/* Mean squared error: out (1) = mean over all elements of (pred − target)². target is a
 * Var without grad. Saves pred and target. */
Var *op_mse(Var *pred, Var *target, const char *tag);

#endif /* REMAT_OPS_H */
