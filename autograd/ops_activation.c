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

static RematStatus activation_backward(Node *node, const Tensor *dout, Tensor *const dinputs[]);

static const OpInfo RELU_OP = {.name = "relu", .backward = activation_backward};
static const OpInfo GELU_OP = {.name = "gelu", .backward = activation_backward};

/* Backward of relu and gelu, from the one tensor each saved:
 *   relu: forward was out = max(x, 0); out > 0 exactly where x > 0, so
 *         dx += dout · [out > 0], read from the saved output;
 *   gelu: forward was out = gelu(x); dx += dout · gelu'(x), with gelu' spelled out beside
 *         k_gelu_backward, read from the saved input. */
static RematStatus activation_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    Tensor *saved = saved_tensor(node, 0);
    if (!saved) return remat_last_status();
    if (dinputs[0] && node->op == &RELU_OP) k_relu_backward(dinputs[0]->f32, saved->f32, dout->f32, dout->numel);
    else if (dinputs[0]) k_gelu_backward(dinputs[0]->f32, saved->f32, dout->f32, dout->numel);
    tensor_free(saved);
    return REMAT_OK;
}

/* relu or gelu of x, as `op` says; relu saves its output, gelu its input. */
static Var *activation(const OpInfo *op, Var *x, const char *tag)
{
    char label[64];
    if (ops_check_inputs(label, sizeof label, op->name, tag, &x, 1, NULL) != REMAT_OK) return NULL;
    bool cached;
    Tensor *out = ops_output(op, tag, 0, DTYPE_F32, x->value->ndim, x->value->shape, &cached);
    if (!out) return NULL;
    const bool relu = op == &RELU_OP;
    if (!cached && relu) k_relu_forward(out->f32, x->value->f32, out->numel);
    else if (!cached) k_gelu_forward(out->f32, x->value->f32, out->numel);
    return ops_record(op, tag, &x, 1, out, relu ? &out : &x->value, 1, NULL, 0);
}

Var *op_relu(Var *x, const char *tag) { return activation(&RELU_OP, x, tag); }

Var *op_gelu(Var *x, const char *tag) { return activation(&GELU_OP, x, tag); }
