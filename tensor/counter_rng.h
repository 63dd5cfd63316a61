/*
 * counter_rng.h — counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror and
 * Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011), from Random123's
 * header <Random123/philox.h> (Debian: librandom123-dev), used as it is.
 *
 * What it is: a draw that is a pure function of a key and an element index, with no
 * state to carry, save or replay. A dropout mask made this way need not be stored: the
 * backward makes it again from the same key (ops_dropout.c, kernels_attention.c), and a
 * checkpoint region's replay gets the first forward's mask whatever the generator of
 * the step did in between (quiz question 7's other design).
 *
 * The key of one dropout is (seed, step, micro-batch, op instance); element i of its
 * mask comes from one Philox4x32-10 block, which gives four 32-bit words:
 *
 *     Philox key     (seed mod 2^32, seed div 2^32)
 *     Philox counter (i div 4, op instance, micro-batch, step mod 2^32)
 *     draw i         word (i mod 4) of that block, as a float u = (word >> 8)·2^-24
 *
 * exactly as PCG32's pcg32_float turns a word into [0, 1). The step enters modulo 2^32
 * (four billion steps; train stops at 10^8) and an op's elements are numbered below
 * 2^34 (counter_rng_check says so when they are not).
 *
 * What it is not: a stream. Nothing advances; two calls with the same key and index give
 * the same number on any thread.
 */
#ifndef REMAT_COUNTER_RNG_H
#define REMAT_COUNTER_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* What one dropout's mask is a function of (besides the element index). */
typedef struct CounterKey {
    uint64_t seed;        /* the run's seed */
    uint64_t step;        /* the training step (enters modulo 2^32) */
    uint32_t micro_batch; /* the micro-batch within the step (0 without accumulation) */
    uint32_t op;          /* the op instance: a stable index of the dropout site in the model */
} CounterKey;

/* Elements one key can number: 2^34 (the counter's 32-bit block index times 4). */
#define COUNTER_RNG_MAX_ELEMENTS ((uint64_t)1 << 34)

/* keep[i] = 1 when draw first + i of `key` is >= p, else 0, for i in [0, n). Draws are
 * made four at a time, one Philox block each; `first` need not be a multiple of 4. */
void counter_rng_keep(uint8_t *keep, const CounterKey *key, uint64_t first, size_t n, float p);

/* REMAT_OK when elements [0, n) can all be numbered under one key; otherwise REMAT_EINVAL
 * naming `what` and the limit. */
RematStatus counter_rng_check(uint64_t n, const char *what);

#endif /* REMAT_COUNTER_RNG_H */
