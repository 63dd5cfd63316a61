/*
 * ops_activation.c — pointwise nonlinearities: relu and gelu.
 *
 * They differ in what they keep for backward, and that is the point: relu's derivative
 * can be read off its output (out > 0), and the next linear saves that same output as its
 * input, so relu costs no extra activation memory; gelu's derivative needs its input.
 */
#include "autograd/ops.h"

#include "tensor/kernels.h"
#include "autograd/ops_internal.h"

/* ---- relu --------------------------------------------------------------------------- */

/* Backward of relu. Forward was out = max(x, 0); out > 0 exactly where x > 0, so
 * dx += dout · [out > 0], read from the saved output. */
static RematStatus relu_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Tensor *out = saved_tensor(node, 0);
    if (!out) return remat_last_status();
    if (dinputs[0]) k_relu_backward(dinputs[0]->f32, out->f32, dout->f32, dout->numel);
    tensor_free(out);
    return REMAT_OK;
}

static const OpInfo RELU_OP = {.name = "relu", .backward = relu_backward};

Var *op_relu(Var *x, const char *tag)
{
    char label[64];
    if (ops_check_inputs(label, sizeof label, "relu", tag, &x, 1, NULL) != REMAT_OK) return NULL;
    bool cached;
    Tensor *out = ops_output(&RELU_OP, tag, 0, DTYPE_F32, x->value->ndim, x->value->shape, &cached);
    if (!out) return NULL;
    if (!cached) k_relu_forward(out->f32, x->value->f32, out->numel);
    return ops_record(&RELU_OP, tag, &x, 1, out, &out, 1, NULL, 0);
}

/* ---- gelu --------------------------------------------------------------------------- */

/* Backward of gelu. Forward was out = gelu(x); dx += dout · gelu'(x), with gelu' spelled
 * out beside k_gelu_backward. */
static RematStatus gelu_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Tensor *x = saved_tensor(node, 0);
    if (!x) return remat_last_status();
    if (dinputs[0]) k_gelu_backward(dinputs[0]->f32, x->f32, dout->f32, dout->numel);
    tensor_free(x);
    return REMAT_OK;
}

static const OpInfo GELU_OP = {.name = "gelu", .backward = gelu_backward};

Var *op_gelu(Var *x, const char *tag)
{
    char label[64];
    if (ops_check_inputs(label, sizeof label, "gelu", tag, &x, 1, NULL) != REMAT_OK) return NULL;
    bool cached;
    Tensor *out = ops_output(&GELU_OP, tag, 0, DTYPE_F32, x->value->ndim, x->value->shape, &cached);
    if (!out) return NULL;
    if (!cached) k_gelu_forward(out->f32, x->value->f32, out->numel);
    return ops_record(&GELU_OP, tag, &x, 1, out, &x->value, 1, NULL, 0);
}
