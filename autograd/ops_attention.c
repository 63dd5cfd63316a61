/*
 * ops_attention.c — the pieces of causal self-attention that are not matmuls: cutting
 * the fused q,k,v projection into heads, putting heads back side by side, and the causal
 * softmax; and the whole attention core as one fused op.
 *
 * Attention itself is composed from primitive ops in the GPT block (models/gpt.c), so
 * that each step has its own node and tag for selective checkpoint policies:
 *   qkv = linear(x)            (B,T,3C)
 *   q, k, v = split_heads(qkv) (B,H,T,D) each
 *   scores = matmul(q, k^T)/sqrt(D), att = causal_softmax(scores), y = matmul(att, v)
 *   merge_heads(y)             (B,T,C)
 * That path materialises the (B,H,T,T) attention matrix, which is exactly the activation
 * that "attention_core" recomputation is about. The other path is one op,
 * attention_fused (ops.h), which keeps nothing of size T² and recomputes the
 * probabilities in its backward — the same trade as selective recomputation, made inside
 * one kernel. Letters: B batch, T time, C channels, H heads, D = C/H.
 */
#include "autograd/ops.h"

#include "tensor/kernels.h"
#include "autograd/ops_internal.h"

/* ---- split_heads and merge_heads ---------------------------------------------------- */

/* What a split's backward needs beyond the shapes: the `which` third of qkv (b,t,3c) it took. */
typedef struct SplitHeadsAttrs {
    QkvPart which;
} SplitHeadsAttrs;
OPS_ATTRS_FIT(SplitHeadsAttrs);

/* Backward of split_heads and merge_heads: each forward is a copy, and its backward the
 * other's copy, adding. Split's forward was out[b,h,t,d] = qkv[b,t, which·C + h·D + d];
 * so dqkv[b,t, which·C + h·D + d] += dout[b,h,t,d] (the three splits of one qkv each add
 * into their own third of its gradient). Merge's was out[b,t,h·D + d] = y[b,h,t,d]; so
 * dy[b,h,t,d] += dout[b,t,h·D + d]. */
static RematStatus heads_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    if (!dinputs[0]) return REMAT_OK;
    const bool split = dout->ndim == 4; /* a split's dout is (B,H,T,D), a merge's (B,T,C) */
    const Tensor *heads = split ? dout : dinputs[0]; /* the (B,H,T,D) side: the sizes */
    const int B = heads->shape[0], H = heads->shape[1], T = heads->shape[2], C = H * heads->shape[3];
    const SplitHeadsAttrs *attrs = ops_attrs(node); /* split only */
    if (split) k_move_heads(TO_ROWS, dinputs[0]->f32 + (size_t)attrs->which * C, dout->f32, 3 * C, B, T, C, H, true);
    else k_move_heads(TO_HEADS, dinputs[0]->f32, dout->f32, C, B, T, C, H, true);
    return REMAT_OK;
}

static const OpInfo SPLIT_HEADS_OP = {.name = "split_heads", .backward = heads_backward};

Var *op_split_heads(Var *qkv, QkvPart which, int H, const char *tag)
{
    char label[64], shape[48];
    if (ops_check_inputs(label, sizeof label, "split_heads", tag, &qkv, 1, NULL) != REMAT_OK) return NULL;
    const Tensor *X = qkv->value;
    if (X->ndim != 3 || X->shape[2] % 3 != 0)
        return remat_fail_null(REMAT_EINVAL, "%s: qkv must be (B,T,3C), got %s", label,
                               tensor_shape_str(shape, sizeof shape, X));
    const int B = X->shape[0], T = X->shape[1], C = X->shape[2] / 3;
    if (H <= 0 || C % H != 0)
        return remat_fail_null(REMAT_EINVAL, "%s: %d channels (qkv %s) do not split into %d heads", label, C,
                               tensor_shape_str(shape, sizeof shape, X), H);
    if (which != QKV_Q && which != QKV_K && which != QKV_V)
        return remat_fail_null(REMAT_EINVAL, "%s: which must be QKV_Q, QKV_K or QKV_V, got %d", label, (int)which);
    bool cached;
    Tensor *out = ops_output(&SPLIT_HEADS_OP, tag, 0, DTYPE_F32, 4, (int[]){B, H, T, C / H}, &cached);
    if (!out) return NULL;
    if (!cached) k_move_heads(TO_HEADS, out->f32, X->f32 + (size_t)which * C, 3 * C, B, T, C, H, false);
    const SplitHeadsAttrs attrs = {.which = which};
    return ops_record(&SPLIT_HEADS_OP, tag, &qkv, 1, out, NULL, 0, &attrs, sizeof attrs);
}

static const OpInfo MERGE_HEADS_OP = {.name = "merge_heads", .backward = heads_backward};

Var *op_merge_heads(Var *y, const char *tag)
{
    char label[64], shape[48];
    if (ops_check_inputs(label, sizeof label, "merge_heads", tag, &y, 1, NULL) != REMAT_OK) return NULL;
    const Tensor *Y = y->value;
    if (Y->ndim != 4)
        return remat_fail_null(REMAT_EINVAL, "%s: y must be (B,H,T,D), got %s", label,
                               tensor_shape_str(shape, sizeof shape, Y));
    const int B = Y->shape[0], H = Y->shape[1], T = Y->shape[2], C = H * Y->shape[3];
    bool cached;
    Tensor *out = ops_output(&MERGE_HEADS_OP, tag, 0, DTYPE_F32, 3, (int[]){B, T, C}, &cached);
    if (!out) return NULL;
    if (!cached) k_move_heads(TO_ROWS, out->f32, Y->f32, C, B, T, C, H, false);
    return ops_record(&MERGE_HEADS_OP, tag, &y, 1, out, NULL, 0, NULL, 0);
}

/* ---- causal_softmax ----------------------------------------------------------------- */

/* Backward of causal_softmax. Forward was, for row t, out = softmax(x[0..t]) and 0 in
 * columns t+1..T−1; so on the kept columns dx += out ⊙ (dout − Σ_j dout_j·out_j) and the
 * masked columns get nothing (they did not depend on x). Read from the saved output,
 * whose shape (..., T, T) gives the rows and T. */
static RematStatus causal_softmax_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Tensor *out = saved_tensor(node, 0);
    if (!out) return remat_last_status();
    const int T = out->shape[out->ndim - 1];
    if (dinputs[0]) k_softmax_backward(dinputs[0]->f32, out->f32, dout->f32, (int)(out->numel / T), T, true);
    tensor_free(out);
    return REMAT_OK;
}

static const OpInfo CAUSAL_SOFTMAX_OP = {.name = "causal_softmax", .backward = causal_softmax_backward};

Var *op_causal_softmax(Var *scores, const char *tag)
{
    char label[64], shape[48];
    if (ops_check_inputs(label, sizeof label, "causal_softmax", tag, &scores, 1, NULL) != REMAT_OK) return NULL;
    const Tensor *S = scores->value;
    if (S->ndim < 2 || S->shape[S->ndim - 1] != S->shape[S->ndim - 2])
        return remat_fail_null(REMAT_EINVAL, "%s: scores must be (..., T, T), got %s", label,
                               tensor_shape_str(shape, sizeof shape, S));
    const int T = S->shape[S->ndim - 1];
    bool cached;
    Tensor *out = ops_output(&CAUSAL_SOFTMAX_OP, tag, 0, DTYPE_F32, S->ndim, S->shape, &cached);
    if (!out) return NULL;
    if (!cached) k_softmax_forward(out->f32, S->f32, (int)(S->numel / T), T, true);
    return ops_record(&CAUSAL_SOFTMAX_OP, tag, &scores, 1, out, &out, 1, NULL, 0);
}

/* ---- attention_fused ---------------------------------------------------------------- */

/* What a fused attention's backward needs: bh heads of (t,d), and its dropout if any. */
typedef struct AttentionFusedAttrs {
    int bh, t, d;
    bool dropout;     /* p > 0: the masks are made again from drop's key */
    AttnDropout drop; /* dropout only */
} AttentionFusedAttrs;
OPS_ATTRS_FIT(AttentionFusedAttrs);

/* Backward of attention_fused. Forward was out = softmax(q·kᵀ/√D, causal) ⊙ keep/(1 − p)
 * · v, kept as out and the rows' log-sum-exp; so the kernel recomputes each tile's
 * probabilities from q, k and lse (RECOMPUTE FLOPs) and accumulates dq, dk, dv
 * (k_attention_backward spells out each term). */
static RematStatus attention_fused_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    const AttentionFusedAttrs *attrs = ops_attrs(node);
    const int BH = attrs->bh, T = attrs->t, D = attrs->d;
    Tensor *saved[5] = {0}, *grads[3] = {0}, *work = NULL;
    RematStatus status = REMAT_OK;
    for (int i = 0; i < 5 && status == REMAT_OK; i++)
        if (!(saved[i] = saved_tensor(node, i))) status = remat_last_status();
    for (int i = 0; i < 3 && status == REMAT_OK; i++) { /* the kernel adds into all three */
        grads[i] = dinputs[i] ? tensor_retain(dinputs[i]) : tensor_zeros(MEM_WORK, saved[i]->ndim, saved[i]->shape);
        if (!grads[i]) status = remat_last_status(); /* the engine's buffer, or zero-filled scratch */
    }
    const AttnPlan plan = ATTN_PLAN_DEFAULT;
    if (status == REMAT_OK &&
        !(work = tensor_create(MEM_WORK, DTYPE_F32, 1, (int[]){(int)k_attention_work_floats(T, D, &plan)})))
        status = remat_last_status();
    if (status == REMAT_OK)
        k_attention_backward(grads[0]->f32, grads[1]->f32, grads[2]->f32, dout->f32, saved[0]->f32, saved[1]->f32,
                             saved[2]->f32, saved[3]->f32, saved[4]->f32, BH, T, D,
                             attrs->dropout ? &attrs->drop : NULL, &plan, work->f32);
    tensor_free(work);
    for (int i = 0; i < 3; i++) tensor_free(grads[i]);
    for (int i = 0; i < 5; i++) tensor_free(saved[i]);
    return status;
}

static const char *const ATTENTION_FUSED_SAVED[] = {"q", "k", "v", "out", "log-sum-exp"};
static const OpInfo ATTENTION_FUSED_OP = {.name = "attention_fused", .backward = attention_fused_backward,
                                          .saved_names = ATTENTION_FUSED_SAVED};

/* The checks of op_attention_fused's inputs, and whether it drops out; REMAT_OK or the
 * error naming what is wrong. */
static RematStatus check_fused_inputs(const char *label, Var *const qkv[3], float p, const TrainCtx *ctx,
                                      bool *dropping)
{
    static const char *const names[3] = {"q", "k", "v"};
    char shape[48], want[48];
    const Tensor *Q = qkv[0]->value;
    if (Q->ndim != 4)
        return remat_fail(REMAT_EINVAL, "%s: q must be (B,H,T,D), got %s", label, tensor_shape_str(shape, sizeof shape, Q));
    for (int i = 1; i < 3; i++)
        if (!tensor_same_shape(qkv[i]->value, Q))
            return remat_fail(REMAT_EINVAL, "%s: %s is %s, not q's %s", label, names[i],
                              tensor_shape_str(shape, sizeof shape, qkv[i]->value), tensor_shape_str(want, sizeof want, Q));
    if (!(p >= 0.0f && p < 1.0f)) return remat_fail(REMAT_EINVAL, "%s: p must be in [0, 1), got %g", label, (double)p);
    *dropping = ctx && ctx->training && p > 0.0f;
    if (*dropping && ctx->dropout_rng != DROPOUT_RNG_COUNTER)
        return remat_fail(REMAT_EINVAL, "%s: dropout p = %g inside fused attention needs the counter-based generator: "
                          "its masks are made again in backward, never stored", label, (double)p);
    return *dropping ? counter_rng_check((uint64_t)Q->shape[0] * Q->shape[1] * Q->shape[2] * Q->shape[2], label)
                     : REMAT_OK;
}

Var *op_attention_fused(Var *q, Var *k, Var *v, float p, const TrainCtx *ctx, uint32_t site, const char *tag)
{
    Var *inputs[3] = {q, k, v};
    char label[64];
    bool dropping;
    if (ops_check_inputs(label, sizeof label, "attention_fused", tag, inputs, 3, NULL) != REMAT_OK) return NULL;
    if (check_fused_inputs(label, inputs, p, ctx, &dropping) != REMAT_OK) return NULL;
    const Tensor *Q = q->value;
    const int B = Q->shape[0], H = Q->shape[1], T = Q->shape[2], D = Q->shape[3], BH = B * H;
    bool cached;
    Tensor *out = ops_output(&ATTENTION_FUSED_OP, tag, 0, DTYPE_F32, 4, Q->shape, &cached);
    Tensor *lse = out ? ops_output(&ATTENTION_FUSED_OP, tag, 1, DTYPE_F32, 3, (int[]){B, H, T}, &cached) : NULL;
    const AttnPlan plan = ATTN_PLAN_DEFAULT;
    Tensor *work = lse && !cached
                       ? tensor_create(MEM_WORK, DTYPE_F32, 1, (int[]){(int)k_attention_work_floats(T, D, &plan)})
                       : NULL;
    if (!lse || (!cached && !work)) {
        tensor_free(out);
        tensor_free(lse);
        return NULL;
    }
    const AttnDropout drop = {.p = p, .key = dropping ? dropout_counter_key(ctx, site) : (CounterKey){0}};
    if (!cached)
        k_attention_forward(out->f32, lse->f32, Q->f32, k->value->f32, v->value->f32, BH, T, D, dropping ? &drop : NULL,
                            &plan, work->f32);
    tensor_free(work);
    const AttentionFusedAttrs attrs = {.bh = BH, .t = T, .d = D, .dropout = dropping, .drop = drop};
    Tensor *save[5] = {q->value, k->value, v->value, out, lse};
    Var *y = ops_record(&ATTENTION_FUSED_OP, tag, inputs, 3, out, save, 5, &attrs, sizeof attrs);
    tensor_free(lse); /* the node holds it now, or nobody needs it (grad mode off) */
    if (!y) return NULL;
    const int scores[4] = {B, H, T, T};
    op_hooks_regenerated(&ATTENTION_FUSED_OP, tag, "probabilities", DTYPE_F32, 4, scores);
    if (dropping) op_hooks_regenerated(&ATTENTION_FUSED_OP, tag, "mask", DTYPE_U8, 4, scores);
    return y;
}
