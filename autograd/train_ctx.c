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
    const bool counter = ctx && ctx->training && ctx->dropout_rng == DROPOUT_RNG_COUNTER;
    const CounterKey key = counter ? dropout_counter_key(ctx, instance) : (CounterKey){0};
    return op_dropout(x, p, ctx ? &ctx->rng : NULL, counter ? &key : NULL, ctx && ctx->training, tag);
}

CounterKey dropout_counter_key(const TrainCtx *ctx, uint32_t instance)
{
    return (CounterKey){.seed = ctx->seed, .step = ctx->step, .micro_batch = ctx->micro_batch, .op = instance};
}
