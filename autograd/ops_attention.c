/*
 * ops_attention.c — the pieces of causal self-attention that are not matmuls: cutting
 * the fused q,k,v projection into heads, putting heads back side by side, and the causal
 * softmax.
 *
 * Attention itself is composed from primitive ops in the GPT block (layers_gpt.c), so
 * that each step has its own node and tag for selective checkpoint policies:
 *   qkv = linear(x)            (B,T,3C)
 *   q, k, v = split_heads(qkv) (B,H,T,D) each
 *   scores = matmul(q, k^T)/sqrt(D), att = causal_softmax(scores), y = matmul(att, v)
 *   merge_heads(y)             (B,T,C)
 * What this file is not: a fused or flash attention. The (B,H,T,T) attention matrix is
 * materialised, which is exactly the activation that "attention_core" recomputation is
 * about. Letters: B batch, T time, C channels, H heads, D = C/H.
 */
#include "autograd/ops.h"

#include "tensor/kernels.h"
#include "ops_internal.h"

/* ---- split_heads -------------------------------------------------------------------- */

/* Backward of split_heads. Forward was out[b,h,t,d] = qkv[b,t, which·C + h·D + d], a
 * copy; so dqkv[b,t, which·C + h·D + d] += dout[b,h,t,d]. The three splits of one qkv
 * each add into their own third of its gradient. */
static RematStatus split_heads_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    const int B = node->attrs.i[0], T = node->attrs.i[1], C = node->attrs.i[2];
    const int H = node->attrs.i[3], which = node->attrs.i[4];
    if (dinputs[0]) k_split_heads_backward(dinputs[0]->f32, dout->f32, which, B, T, C, H);
    return REMAT_OK;
}

static const OpInfo SPLIT_HEADS_OP = {"split_heads", split_heads_backward};

Var *op_split_heads(Var *qkv, QkvPart which, int H, const char *tag)
{
    if (ops_check_inputs("split_heads", &qkv, 1) != REMAT_OK) return NULL;
    char label[64], shape[48];
    ops_label(label, sizeof label, "split_heads", tag);
    if (ops_check_dtype(label, qkv, "qkv", DTYPE_F32) != REMAT_OK) return NULL;
    const Tensor *X = qkv->value;
    tensor_shape_str(shape, sizeof shape, X);
    if (X->ndim != 3 || X->shape[2] % 3 != 0) {
        remat_fail(REMAT_EINVAL, "%s: qkv must be (B,T,3C), got %s", label, shape);
        return NULL;
    }
    const int B = X->shape[0], T = X->shape[1], C = X->shape[2] / 3;
    if (H <= 0 || C % H != 0) {
        remat_fail(REMAT_EINVAL, "%s: %d channels (qkv %s) do not split into %d heads", label, C, shape, H);
        return NULL;
    }
    if (which != QKV_Q && which != QKV_K && which != QKV_V) {
        remat_fail(REMAT_EINVAL, "%s: which must be QKV_Q, QKV_K or QKV_V, got %d", label, (int)which);
        return NULL;
    }
    bool cached;
    Tensor *out = ops_output(&SPLIT_HEADS_OP, tag, 0, DTYPE_F32, 4, (int[]){B, H, T, C / H}, &cached);
    if (!out) return NULL;
    if (!cached) k_split_heads_forward(out->f32, X->f32, (int)which, B, T, C, H);
    NodeAttrs attrs = {.i = {B, T, C, H, (int)which}};
    return ops_record(&SPLIT_HEADS_OP, tag, &qkv, 1, out, NULL, 0, &attrs);
}

/* ---- merge_heads -------------------------------------------------------------------- */

/* Backward of merge_heads. Forward was out[b,t,h·D + d] = y[b,h,t,d], a copy; so
 * dy[b,h,t,d] += dout[b,t,h·D + d]. */
static RematStatus merge_heads_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    const int B = node->attrs.i[0], T = node->attrs.i[1], C = node->attrs.i[2], H = node->attrs.i[3];
    if (dinputs[0]) k_merge_heads_backward(dinputs[0]->f32, dout->f32, B, T, C, H);
    return REMAT_OK;
}

static const OpInfo MERGE_HEADS_OP = {"merge_heads", merge_heads_backward};

Var *op_merge_heads(Var *y, const char *tag)
{
    if (ops_check_inputs("merge_heads", &y, 1) != REMAT_OK) return NULL;
    char label[64], shape[48];
    ops_label(label, sizeof label, "merge_heads", tag);
    if (ops_check_dtype(label, y, "y", DTYPE_F32) != REMAT_OK) return NULL;
    const Tensor *Y = y->value;
    if (Y->ndim != 4) {
        remat_fail(REMAT_EINVAL, "%s: y must be (B,H,T,D), got %s", label, tensor_shape_str(shape, sizeof shape, Y));
        return NULL;
    }
    const int B = Y->shape[0], H = Y->shape[1], T = Y->shape[2], C = H * Y->shape[3];
    bool cached;
    Tensor *out = ops_output(&MERGE_HEADS_OP, tag, 0, DTYPE_F32, 3, (int[]){B, T, C}, &cached);
    if (!out) return NULL;
    if (!cached) k_merge_heads_forward(out->f32, Y->f32, B, T, C, H);
    NodeAttrs attrs = {.i = {B, T, C, H}};
    return ops_record(&MERGE_HEADS_OP, tag, &y, 1, out, NULL, 0, &attrs);
}

/* ---- causal_softmax ----------------------------------------------------------------- */

/* Backward of causal_softmax. Forward was, for row t, out = softmax(x[0..t]) and 0 in
 * columns t+1..T−1; so on the kept columns dx += out ⊙ (dout − Σ_j dout_j·out_j) and the
 * masked columns get nothing (they did not depend on x). Read from the saved output. */
static RematStatus causal_softmax_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    const int BH = node->attrs.i[0], T = node->attrs.i[1];
    Tensor *out = saved_tensor(node, 0);
    if (!out) return remat_last_status();
    if (dinputs[0]) k_causal_softmax_backward(dinputs[0]->f32, out->f32, dout->f32, BH, T);
    tensor_free(out);
    return REMAT_OK;
}

static const OpInfo CAUSAL_SOFTMAX_OP = {"causal_softmax", causal_softmax_backward};

Var *op_causal_softmax(Var *scores, const char *tag)
{
    if (ops_check_inputs("causal_softmax", &scores, 1) != REMAT_OK) return NULL;
    char label[64], shape[48];
    ops_label(label, sizeof label, "causal_softmax", tag);
    if (ops_check_dtype(label, scores, "scores", DTYPE_F32) != REMAT_OK) return NULL;
    const Tensor *S = scores->value;
    if (S->ndim < 2 || S->shape[S->ndim - 1] != S->shape[S->ndim - 2]) {
        remat_fail(REMAT_EINVAL, "%s: scores must be (..., T, T), got %s", label,
                   tensor_shape_str(shape, sizeof shape, S));
        return NULL;
    }
    const int T = S->shape[S->ndim - 1];
    const int BH = (int)(S->numel / ((size_t)T * (size_t)T));
    bool cached;
    Tensor *out = ops_output(&CAUSAL_SOFTMAX_OP, tag, 0, DTYPE_F32, S->ndim, S->shape, &cached);
    if (!out) return NULL;
    if (!cached) k_causal_softmax_forward(out->f32, S->f32, BH, T);
    NodeAttrs attrs = {.i = {BH, T}};
    return ops_record(&CAUSAL_SOFTMAX_OP, tag, &scores, 1, out, &out, 1, &attrs);
}
