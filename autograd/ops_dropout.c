/*
 * ops_dropout.c — dropout, the one op whose forward is random, with its mask from either
 * of the two generators a TrainCtx names (train_ctx.h), and the context's own few lines:
 * the generators' names and the counter's key of a dropout site.
 *
 * Stream (PCG32, the context's generator). What it saves is the point: the uint8 mask
 * (ops.h), never the float output (4 bytes) nor x. Its draws go in element order
 * (k_dropout_forward), so the generator's position after the op is known exactly: a
 * checkpoint region that saves the generator at its entry and restores it for the replay
 * gets every mask back bit for bit; a replay that skips a dropout can pcg32_advance past
 * its draws.
 *
 * Counter (Philox, tensor/counter_rng.h). The mask is a function of the op's key and the
 * element alone, and nothing is saved (ops.h). No generator moves, so a replay gets the
 * same mask whether or not anything restores a generator, and a cached replay has nothing
 * to skip.
 */
#include "autograd/ops.h"

#include "tensor/kernels.h"
#include "autograd/ops_internal.h"

/* What a dropout's backward needs: p, and for the counter's mask, made again, its key. */
typedef struct DropoutAttrs {
    float p;
    bool counter;   /* the mask comes from `key`; else the node saved it */
    CounterKey key; /* counter only */
} DropoutAttrs;
OPS_ATTRS_FIT(DropoutAttrs);

/* Backward of dropout. Forward was out = x·mask/(1 − p); so dx += dout·mask/(1 − p)
 * (nothing where the element was dropped). The stream's mask is read from what the node
 * saved; the counter's is made again from the node's key. */
static RematStatus dropout_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    const DropoutAttrs *attrs = ops_attrs(node);
    const float p = attrs->p;
    if (attrs->counter && dinputs[0]) k_dropout_counter_backward(dinputs[0]->f32, dout->f32, p, &attrs->key, dout->numel);
    if (attrs->counter) return REMAT_OK;
    Tensor *mask = saved_tensor(node, 0);
    if (!mask) return remat_last_status();
    if (dinputs[0]) k_dropout_backward(dinputs[0]->f32, dout->f32, mask->u8, p, dout->numel);
    tensor_free(mask);
    return REMAT_OK;
}

static const char *const DROPOUT_SAVED[] = {"mask"}; /* the stream's; the counter's saves nothing */
static const OpInfo DROPOUT_OP = {.name = "dropout", .backward = dropout_backward, .saved_names = DROPOUT_SAVED};

Var *op_dropout(Var *x, float p, TrainCtx *ctx, uint32_t site, const char *tag)
{
    char label[64];
    if (ops_check_inputs(label, sizeof label, "dropout", tag, &x, 1, NULL) != REMAT_OK) return NULL;
    if (!(p >= 0.0f && p < 1.0f))
        return remat_fail_null(REMAT_EINVAL, "%s: p must be in [0, 1), got %g", label, (double)p);
    if (!ctx || !ctx->training || p == 0.0f) return var_retain(x); /* the identity: nothing to draw or save */
    const Tensor *X = x->value;
    bool cached;
    if (ctx->dropout_rng == DROPOUT_RNG_COUNTER) { /* nothing to save, and nothing to skip if cached */
        const DropoutAttrs attrs = {.p = p, .counter = true, .key = dropout_counter_key(ctx, site)};
        if (counter_rng_check(X->numel, label) != REMAT_OK) return NULL;
        Tensor *out = ops_output(&DROPOUT_OP, tag, 0, DTYPE_F32, X->ndim, X->shape, &cached);
        if (!out) return NULL;
        if (!cached) k_dropout_counter_forward(out->f32, X->f32, p, &attrs.key, X->numel);
        Var *y = ops_record(&DROPOUT_OP, tag, &x, 1, out, NULL, 0, &attrs, sizeof attrs);
        if (y) op_hooks_regenerated(&DROPOUT_OP, tag, "mask", DTYPE_U8, X->ndim, X->shape);
        return y;
    }
    Tensor *mask = ops_output(&DROPOUT_OP, tag, 0, DTYPE_U8, X->ndim, X->shape, &cached);
    Tensor *out = mask ? ops_output(&DROPOUT_OP, tag, 1, DTYPE_F32, X->ndim, X->shape, &cached) : NULL;
    if (!out) {
        tensor_free(mask);
        return NULL;
    }
    const Pcg32 before = ctx->rng;
    if (cached) {
        /* A checkpoint replay offered the mask and output of the first forward. The
         * generator must still move on by the draws they took, one per element, or every
         * later random draw of the replay would shift (checkpoint/README.md). */
        pcg32_advance(&ctx->rng, X->numel);
    } else {
        k_dropout_forward(out->f32, mask->u8, X->f32, p, &ctx->rng, X->numel);
    }
    const DropoutAttrs attrs = {.p = p};
    Var *y = ops_record(&DROPOUT_OP, tag, &x, 1, out, &mask, 1, &attrs, sizeof attrs);
    tensor_free(mask); /* the node holds it now, or nobody needs it (grad mode off) */
    if (!y) ctx->rng = before; /* a failed op changes nothing, the generator included */
    return y;
}

/* ---- the context's generator ---------------------------------------------------------- */

static const char *const DROPOUT_RNGS[] = {"stream", "counter"};
const NameTable DROPOUT_RNG_NAMES = {DROPOUT_RNGS, 2};

CounterKey dropout_counter_key(const TrainCtx *ctx, uint32_t site)
{
    return (CounterKey){.seed = ctx->seed, .step = ctx->step, .micro_batch = ctx->micro_batch, .op = site};
}
