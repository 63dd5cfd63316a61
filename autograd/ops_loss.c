/*
 * ops_loss.c — losses: a single-element Var that backward starts from.
 */
#include "ops.h"

#include "kernels.h"
#include "ops_internal.h"

/* ---- mse ---------------------------------------------------------------------------- */

/* Backward of mse. Forward was loss = (1/n) Σ (pred − target)²; so
 * dpred += dloss · (2/n) · (pred − target). The target gets no gradient. */
static RematStatus mse_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Tensor *pred = saved_tensor(node, 0);
    Tensor *target = saved_tensor(node, 1);
    RematStatus status = pred && target ? REMAT_OK : remat_last_status();
    if (status == REMAT_OK && dinputs[0])
        k_mse_backward(dinputs[0]->f32, pred->f32, target->f32, dout->f32[0], pred->numel);
    tensor_free(pred);
    tensor_free(target);
    return status;
}

static const OpInfo MSE_OP = {"mse", mse_backward};

Var *op_mse(Var *pred, Var *target, const char *tag)
{
    Var *inputs[2] = {pred, target};
    if (ops_check_inputs("mse", inputs, 2) != REMAT_OK) return NULL;
    if (pred->value->numel != target->value->numel) {
        remat_fail(REMAT_EINVAL, "mse: prediction has %zu elements, target %zu",
                   pred->value->numel, target->value->numel);
        return NULL;
    }
    Tensor *out = tensor_create(MEM_ACT, 1, (int[]){1});
    if (!out) return NULL;
    out->f32[0] = (float)k_mse_forward(pred->value->f32, target->value->f32, pred->value->numel);
    Tensor *save[2] = {pred->value, target->value};
    return ops_record(&MSE_OP, tag, inputs, 2, out, save, 2, NULL);
}
