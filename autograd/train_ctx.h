/*
 * train_ctx.h — what a forward pass needs beyond its input: whether it trains, and where
 * its dropout masks come from.
 *
 * Every layer's forward and every model stage takes a TrainCtx; the only ops that read it
 * are the dropouts (op_dropout, and op_attention_fused's), so what little it has beyond
 * its fields is defined beside them, in ops_dropout.c. A checkpoint region saves and
 * restores the context's stream (checkpoint/replay.h). What it is not: a layer
 * (autograd/layers.h) or an op (autograd/ops.h) — it holds no parameters and records
 * nothing on the tape itself.
 */
#ifndef REMAT_TRAIN_CTX_H
#define REMAT_TRAIN_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "base/parse.h"
#include "tensor/counter_rng.h"
#include "tensor/rng.h"

/* Where dropout masks come from: a running PCG32 stream (the default), or a
 * counter-based generator keyed by (seed, step, micro-batch, dropout site). */
typedef enum DropoutRng { DROPOUT_RNG_STREAM = 0, DROPOUT_RNG_COUNTER } DropoutRng;

/* Stream: masks are drawn from `rng`, which checkpoint regions save and restore. Counter:
 * `rng` is not used; a mask is a pure function of its key, so nothing needs restoring. */
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

/* The counter-based generator's key for dropout site `site` in the step ctx runs:
 * (ctx->seed, ctx->step, ctx->micro_batch, site). */
CounterKey dropout_counter_key(const TrainCtx *ctx, uint32_t site);

#endif /* REMAT_TRAIN_CTX_H */
