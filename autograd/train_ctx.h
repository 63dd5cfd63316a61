/*
 * train_ctx.h — what a forward pass needs beyond its input: whether it trains, and where
 * its dropout masks come from.
 *
 * Every layer's forward and every model stage takes a TrainCtx; the only op that reads it
 * is dropout, through dropout_apply, so the context and that one consumer live together
 * here. A checkpoint region saves and restores the context's stream (checkpoint/replay.h).
 * What it is not: a layer (autograd/layers.h) or an op (autograd/ops.h) — it holds no
 * parameters and records nothing on the tape itself.
 */
#ifndef REMAT_TRAIN_CTX_H
#define REMAT_TRAIN_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "autograd/autograd.h"
#include "base/parse.h"
#include "tensor/counter_rng.h"
#include "tensor/rng.h"

/* Where dropout masks come from: a running PCG32 stream (the default), or a
 * counter-based generator keyed by (seed, step, micro-batch, op instance). */
typedef enum DropoutRng { DROPOUT_RNG_STREAM = 0, DROPOUT_RNG_COUNTER } DropoutRng;

/* With the stream, masks are drawn from `rng`, which checkpoint regions save and restore.
 * With the counter, a mask is a pure function of seed, step, micro_batch and the
 * dropout's op instance (dropout_apply), and `rng` is not used: nothing needs restoring. */
typedef struct TrainCtx {
    Pcg32 rng;
    bool training;
    DropoutRng dropout_rng; /* DROPOUT_RNG_STREAM unless set */
    uint64_t seed;          /* counter: the run's seed */
    uint64_t step;          /* counter: the training step the forward belongs to */
    uint32_t micro_batch;   /* counter: the micro-batch within the step (0: no accumulation) */
} TrainCtx;

/* "stream", "counter": the names of DropoutRng's values. */
extern const NameTable DROPOUT_RNG_NAMES;

/* Its name in DROPOUT_RNG_NAMES. */
const char *dropout_rng_name(DropoutRng rng);

/* Dropout with probability p as `ctx` says: the identity when ctx is NULL or not
 * training; else op_dropout on ctx->rng (stream) or with the key (ctx->seed, ctx->step,
 * ctx->micro_batch, `instance`) (counter). `instance` names the
 * dropout site in the model and must be the same every time that site runs — in the
 * first forward and in any replay — and differ between sites: a model numbers its sites
 * from its structure (models/gpt.h says how the GPT does). */
Var *dropout_apply(Var *x, float p, TrainCtx *ctx, uint32_t instance, const char *tag);

/* The counter-based generator's key for op instance `instance` in the step ctx runs:
 * (ctx->seed, ctx->step, ctx->micro_batch, instance). */
CounterKey dropout_counter_key(const TrainCtx *ctx, uint32_t instance);

#endif /* REMAT_TRAIN_CTX_H */
