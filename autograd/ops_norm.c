/*
 * ops_norm.c — normalisation: layernorm.
 *
 * LayerNorm is the op that shows a design choice about what to save: the per-row mean and
 * rstd its backward needs are N floats each, tiny next to x (N·C), so the forward keeps
 * them beside x and the weight (ops.h). Letters: N rows (leading dims flattened), C the
 * normalised width.
 */
#include "autograd/ops.h"

#include <math.h>

#include "tensor/kernels.h"
#include "autograd/ops_internal.h"

/* Backward of layernorm. Forward was, per row, norm = (x − mean)·rstd and
 * out = norm·weight + bias; so (written out beside k_layernorm_backward)
 *   dbias   += Σ_rows dout
 *   dweight += Σ_rows dout·norm
 *   dx      += rstd·(dnorm − mean(dnorm) − norm·mean(dnorm·norm)),  dnorm = dout·weight.
 * The kernel produces all three at once, over as many rows as the saved mean has, each of
 * the weight's width (eps lives on in the saved rstd). A gradient that no input wants (a
 * frozen weight, a constant x) goes to zero-filled scratch of its shape, dropped afterwards. */
static RematStatus layernorm_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Tensor *x = saved_tensor(node, 0), *weight = saved_tensor(node, 1);
    Tensor *mean = saved_tensor(node, 2), *rstd = saved_tensor(node, 3);
    Tensor *saved[4] = {x, weight, mean, rstd}, *grads[3] = {0}; /* grads: dx, dweight, dbias */
    RematStatus status = x && weight && mean && rstd ? REMAT_OK : remat_last_status();
    for (int i = 0; i < 3 && status == REMAT_OK; i++) {
        const Tensor *like = i == 0 ? x : weight; /* the bias has the weight's shape */
        grads[i] = dinputs[i] ? tensor_retain(dinputs[i]) : tensor_zeros(MEM_WORK, like->ndim, like->shape);
        if (!grads[i]) status = remat_last_status();
    }
    if (status == REMAT_OK)
        k_layernorm_backward(grads[0]->f32, grads[1]->f32, grads[2]->f32, dout->f32, x->f32, weight->f32, mean->f32,
                             rstd->f32, (int)mean->numel, (int)weight->numel);
    for (int i = 0; i < 3; i++) tensor_free(grads[i]);
    for (int i = 0; i < 4; i++) tensor_free(saved[i]);
    return status;
}

static const char *const LAYERNORM_SAVED[] = {"x", "weight", "mean", "rstd"};
static const OpInfo LAYERNORM_OP = {.name = "layernorm", .backward = layernorm_backward, .saved_names = LAYERNORM_SAVED};

Var *op_layernorm(Var *x, Var *weight, Var *bias, float eps, const char *tag)
{
    Var *inputs[3] = {x, weight, bias};
    char label[64], xs[48];
    if (ops_check_inputs(label, sizeof label, "layernorm", tag, inputs, 3, NULL) != REMAT_OK) return NULL;
    const Tensor *X = x->value;
    const int C = X->shape[X->ndim - 1], N = (int)(X->numel / C); /* rows: the leading dims */
    const Tensor *W = weight->value, *Bt = bias->value;
    if (W->ndim != 1 || W->shape[0] != C || Bt->ndim != 1 || Bt->shape[0] != C)
        return remat_fail_null(REMAT_EINVAL, "%s: x %s wants weight and bias of shape (%d), got %zu and %zu elements",
                               label, tensor_shape_str(xs, sizeof xs, X), C, W->numel, Bt->numel);
    if (!(eps >= 0.0f) || isinf(eps))
        return remat_fail_null(REMAT_EINVAL, "%s: eps must be finite and >= 0, got %g", label, (double)eps);

    bool cached;
    Tensor *out = ops_output(&LAYERNORM_OP, tag, 0, DTYPE_F32, X->ndim, X->shape, &cached);
    Tensor *mean = out ? ops_output(&LAYERNORM_OP, tag, 1, DTYPE_F32, 1, (int[]){N}, &cached) : NULL;
    Tensor *rstd = mean ? ops_output(&LAYERNORM_OP, tag, 2, DTYPE_F32, 1, (int[]){N}, &cached) : NULL;
    if (!rstd) {
        tensor_free(out);
        tensor_free(mean);
        return NULL;
    }
    if (!cached) k_layernorm_forward(out->f32, mean->f32, rstd->f32, X->f32, W->f32, Bt->f32, N, C, eps);

    Tensor *save[4] = {x->value, weight->value, mean, rstd};
    Var *y = ops_record(&LAYERNORM_OP, tag, inputs, 3, out, save, 4, NULL, 0);
    tensor_free(mean); /* the node holds them now, or nobody needs them (grad mode off) */
    tensor_free(rstd);
    return y;
}
