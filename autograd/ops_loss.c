/*
 * ops_loss.c — losses: a single-element Var that backward starts from. mse for the MLP
 * chain's regression; softmax + cross-entropy, fused, for the GPT's next-token
 * prediction (letters: N rows, V vocabulary).
 */
#include "autograd/ops.h"

#include <string.h>

#include "tensor/kernels.h"
#include "autograd/ops_internal.h"

/* ---- backward, one for both ------------------------------------------------------- */

static RematStatus loss_backward(Node *node, const Tensor *dout, Tensor *const dinputs[]);

static const OpInfo MSE_OP = {.name = "mse", .backward = loss_backward};
static const OpInfo CROSS_ENTROPY_OP = {.name = "cross_entropy", .backward = loss_backward};

/* Backward of mse and cross_entropy, from the prediction and targets each saved (the
 * targets get no gradient):
 *   mse: forward was loss = (1/n) Σ (pred − target)²; so
 *        dpred += dloss · (2/n) · (pred − target);
 *   cross_entropy: forward was loss = (1/N) Σ_r −log softmax(logits_r)[target_r]; so
 *        dlogits_r += dloss·(1/N)·(softmax(logits_r) − onehot(target_r)), the softmax
 *        recomputed from the saved logits (see k_cross_entropy_backward): N rows, one per
 *        saved target, of the logits' last dim V. */
static RematStatus loss_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Tensor *pred = saved_tensor(node, 0), *target = saved_tensor(node, 1);
    RematStatus status = pred && target ? REMAT_OK : remat_last_status();
    if (status == REMAT_OK && dinputs[0] && node->op == &MSE_OP)
        k_mse_backward(dinputs[0]->f32, pred->f32, target->f32, dout->f32[0], pred->numel);
    else if (status == REMAT_OK && dinputs[0])
        k_cross_entropy_backward(dinputs[0]->f32, pred->f32, target->i32, dout->f32[0], (int)target->numel,
                                 pred->shape[pred->ndim - 1]);
    tensor_free(pred);
    tensor_free(target);
    return status;
}

/* ---- mse ---------------------------------------------------------------------------- */

Var *op_mse(Var *pred, Var *target, const char *tag)
{
    Var *inputs[2] = {pred, target};
    char label[64];
    if (ops_check_inputs(label, sizeof label, "mse", tag, inputs, 2, NULL) != REMAT_OK) return NULL;
    if (pred->value->numel != target->value->numel)
        return remat_fail_null(REMAT_EINVAL, "%s: prediction has %zu elements, target %zu", label,
                               pred->value->numel, target->value->numel);
    bool cached;
    Tensor *out = ops_output(&MSE_OP, tag, 0, DTYPE_F32, 1, (int[]){1}, &cached);
    if (!out) return NULL;
    if (!cached) out->f32[0] = (float)k_mse_forward(pred->value->f32, target->value->f32, pred->value->numel);
    Tensor *save[2] = {pred->value, target->value};
    return ops_record(&MSE_OP, tag, inputs, 2, out, save, 2, NULL, 0);
}

/* ---- cross_entropy ------------------------------------------------------------------ */

Var *op_cross_entropy(Var *logits, Var *targets, const char *tag)
{
    Var *inputs[2] = {logits, targets};
    char label[64], ls[48], ts[48];
    const DType dtypes[2] = {DTYPE_F32, DTYPE_I32}; /* logits, targets */
    if (ops_check_inputs(label, sizeof label, "cross_entropy", tag, inputs, 2, dtypes) != REMAT_OK) return NULL;
    const Tensor *L = logits->value, *Tg = targets->value;
    const int V = L->shape[L->ndim - 1], N = (int)(L->numel / V); /* rows: the leading dims */
    /* targets' shape must be logits' shape without the last dim: (B,T) for (B,T,V) */
    bool leading_match = L->ndim >= 2 && Tg->ndim == L->ndim - 1 &&
                         !memcmp(Tg->shape, L->shape, (size_t)Tg->ndim * sizeof(int));
    if (!leading_match)
        return remat_fail_null(REMAT_EINVAL, "%s: targets %s do not match logits %s (want logits' shape "
                               "without its last dim)", label, tensor_shape_str(ts, sizeof ts, Tg),
                               tensor_shape_str(ls, sizeof ls, L));
    for (size_t i = 0; i < Tg->numel; i++)
        if (Tg->i32[i] < 0 || Tg->i32[i] >= V)
            return remat_fail_null(REMAT_EINVAL, "%s: target %d at row %zu is outside the vocabulary [0, %d)",
                                   label, (int)Tg->i32[i], i, V);
    bool cached;
    Tensor *out = ops_output(&CROSS_ENTROPY_OP, tag, 0, DTYPE_F32, 1, (int[]){1}, &cached);
    if (!out) return NULL;
    if (!cached) out->f32[0] = (float)k_cross_entropy_forward(L->f32, Tg->i32, N, V);
    Tensor *save[2] = {logits->value, targets->value};
    return ops_record(&CROSS_ENTROPY_OP, tag, inputs, 2, out, save, 2, NULL, 0);
}
