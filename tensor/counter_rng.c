/*
 * counter_rng.c — Philox4x32-10 keyed by a dropout's (seed, step, micro-batch, op
 * instance), see counter_rng.h. The generator itself is Random123's; this file only lays
 * out the key and the counter and turns words into keep decisions.
 */
#include "tensor/counter_rng.h"

#include <math.h>

#include <Random123/philox.h>

/* The keep decision in whole numbers. A word's float is m·2^-24 with m = word >> 8, and
 * m·2^-24 >= p exactly when m >= p·2^24 (scaling by a power of two is exact in float),
 * that is when m >= ceil(p·2^24): the same decision as the draw's float u >= p, bit
 * for bit, made with one integer compare. p <= 0 keeps every element; p >= 1, or NaN, none
 * (m is below 2^24). */
static uint32_t keep_threshold(float p)
{
    if (p <= 0.0f) return 0;
    if (!(p < 1.0f)) return (uint32_t)1 << 24;
    return (uint32_t)ceilf(p * 0x1.0p24f);
}

/* keep[4j + w] for the whole Philox blocks first_block .. first_block + blocks − 1, key and
 * counter laid out as counter_rng.h says (here only). The blocks are independent and the
 * loop is straight-line once philox4x32_R(10, ...) is inlined, so gcc -O3 vectorises it
 * across blocks (eight at once with AVX2: the 32-bit multiplies become vpmuludq); measured
 * about 3 times faster per element than one block at a time. */
static void keep_whole_blocks(uint8_t *restrict keep, const CounterKey *key, uint32_t first_block, size_t blocks,
                              uint32_t threshold)
{
    const philox4x32_key_t k = {{(uint32_t)key->seed, (uint32_t)(key->seed >> 32)}};
    const uint32_t op = key->op, micro_batch = key->micro_batch, step = (uint32_t)key->step;
    for (size_t j = 0; j < blocks; j++) {
        const philox4x32_ctr_t c = {{first_block + (uint32_t)j, op, micro_batch, step}};
        const philox4x32_ctr_t r = philox4x32_R(10, c, k);
        for (int w = 0; w < 4; w++) keep[4 * j + w] = (r.v[w] >> 8) >= threshold;
    }
}

/* keep[i] for elements first + i, i in [0, n), all in first's Philox block: a partial
 * block at either end of counter_rng_keep's range. */
static void keep_part_block(uint8_t *keep, const CounterKey *key, uint64_t first, size_t n, uint32_t threshold)
{
    uint8_t block[4];
    keep_whole_blocks(block, key, (uint32_t)(first >> 2), 1, threshold);
    for (size_t i = 0; i < n; i++) keep[i] = block[(first + i) & 3];
}

void counter_rng_keep(uint8_t *keep, const CounterKey *key, uint64_t first, size_t n, float p)
{
    const uint32_t threshold = keep_threshold(p);
    const size_t to_whole = (size_t)((4 - first % 4) % 4); /* elements before the next multiple of 4 */
    const size_t head = to_whole < n ? to_whole : n, whole = (n - head) / 4, tail = head + 4 * whole;
    if (head > 0) keep_part_block(keep, key, first, head, threshold);
    keep_whole_blocks(keep + head, key, (uint32_t)((first + head) >> 2), whole, threshold);
    if (tail < n) keep_part_block(keep + tail, key, first + tail, n - tail, threshold);
}

RematStatus counter_rng_check(uint64_t n, const char *what)
{
    if (n <= COUNTER_RNG_MAX_ELEMENTS) return REMAT_OK;
    return remat_fail(REMAT_EINVAL, "%s: %llu elements are more than one counter-based key numbers (2^34)",
                      what, (unsigned long long)n);
}
