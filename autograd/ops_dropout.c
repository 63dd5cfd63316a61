/*
 * ops_dropout.c — dropout, the one op whose forward is random.
 *
 * What it saves is the point: only the uint8 keep mask, one byte per element, never the
 * float output (4 bytes) nor x. The mask comes from the caller's PCG32 generator, one
 * draw per element in element order (k_dropout_forward), so the generator's position
 * after the op is known exactly: a checkpoint region that saves the generator at its
 * entry and restores it for the replay gets every mask back bit for bit; a replay that
 * skips a dropout can pcg32_advance past its draws.
 *
 * When not training, or with p = 0, dropout is the identity and this op is a no-op: no
 * draw, no node, no new tensor; it hands back x itself with one more reference.
 */
#include "autograd/ops.h"

#include <math.h>

#include "tensor/kernels.h"
#include "ops_internal.h"

/* ---- dropout ------------------------------------------------------------------------ */

/* Backward of dropout. Forward was out = x·mask/(1 − p); so dx += dout·mask/(1 − p)
 * (nothing where the element was dropped). Read from the saved mask. */
static RematStatus dropout_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    const float p = node->attrs.f[0];
    Tensor *mask = saved_tensor(node, 0);
    if (!mask) return remat_last_status();
    if (dinputs[0]) k_dropout_backward(dinputs[0]->f32, dout->f32, mask->u8, p, dout->numel);
    tensor_free(mask);
    return REMAT_OK;
}

static const OpInfo DROPOUT_OP = {"dropout", dropout_backward};

Var *op_dropout(Var *x, float p, Pcg32 *rng, bool training, const char *tag)
{
    if (ops_check_inputs("dropout", &x, 1) != REMAT_OK) return NULL;
    char label[64];
    ops_label(label, sizeof label, "dropout", tag);
    if (ops_check_dtype(label, x, "x", DTYPE_F32) != REMAT_OK) return NULL;
    if (!(p >= 0.0f && p < 1.0f)) {
        remat_fail(REMAT_EINVAL, "%s: p must be in [0, 1), got %g", label, (double)p);
        return NULL;
    }
    if (!training || p == 0.0f) return var_retain(x); /* the identity: nothing to draw or save */
    if (!rng) {
        remat_fail(REMAT_EINVAL, "%s: training with p = %g needs a generator, got NULL", label, (double)p);
        return NULL;
    }

    const Tensor *X = x->value;
    bool cached;
    Tensor *mask = ops_output(&DROPOUT_OP, tag, 0, DTYPE_U8, X->ndim, X->shape, &cached);
    Tensor *out = mask ? ops_output(&DROPOUT_OP, tag, 1, DTYPE_F32, X->ndim, X->shape, &cached) : NULL;
    if (!out) {
        tensor_free(mask);
        return NULL;
    }
    const Pcg32 before = *rng;
    if (cached) {
        /* A checkpoint replay offered the mask and output of the first forward. The
         * generator must still move on by the draws they took, one per element, or every
         * later random draw of the replay would shift (DESIGN.md's pitfall). */
        pcg32_advance(rng, X->numel);
    } else {
        k_dropout_forward(out->f32, mask->u8, X->f32, p, rng, X->numel);
    }

    NodeAttrs attrs = {.f = {p}};
    Var *y = ops_record(&DROPOUT_OP, tag, &x, 1, out, &mask, 1, &attrs);
    tensor_free(mask); /* the node holds it now, or nobody needs it (grad mode off) */
    if (!y) *rng = before; /* a failed op changes nothing, the generator included */
    return y;
}
