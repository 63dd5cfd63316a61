/*
 * train_ctx.c — the dropout generator's names, and dropout as a TrainCtx asks for it
 * (see train_ctx.h).
 */
#include "autograd/train_ctx.h"

#include "autograd/ops.h"

static const char *const DROPOUT_RNGS[] = {"stream", "counter"};
const NameTable DROPOUT_RNG_NAMES = {DROPOUT_RNGS, 2};

const char *dropout_rng_name(DropoutRng rng)
{
    return name_of(&DROPOUT_RNG_NAMES, (int)rng);
}

Var *dropout_apply(Var *x, float p, TrainCtx *ctx, uint32_t instance, const char *tag)
{
    const bool training = ctx && ctx->training;
    if (!training || ctx->dropout_rng == DROPOUT_RNG_STREAM)
        return op_dropout(x, p, ctx ? &ctx->rng : NULL, training, tag);
    const CounterKey key = dropout_counter_key(ctx, instance);
    return op_dropout_counter(x, p, &key, training, tag);
}

CounterKey dropout_counter_key(const TrainCtx *ctx, uint32_t instance)
{
    return (CounterKey){.seed = ctx->seed, .step = ctx->step, .micro_batch = ctx->micro_batch, .op = instance};
}
