/*
 * counter_rng.c — Philox4x32-10 keyed by a dropout's (seed, step, micro-batch, op
 * instance), see counter_rng.h. The generator itself is Random123's; this file only lays
 * out the key and the counter and turns words into keep decisions.
 */
#include "tensor/counter_rng.h"

#include <Random123/philox.h>

void counter_rng_block(const CounterKey *key, uint32_t block, uint32_t words[4])
{
    const philox4x32_key_t k = {{(uint32_t)key->seed, (uint32_t)(key->seed >> 32)}};
    const philox4x32_ctr_t c = {{block, key->op, key->micro_batch, (uint32_t)key->step}};
    const philox4x32_ctr_t r = philox4x32_R(10, c, k);
    for (int i = 0; i < 4; i++) words[i] = r.v[i];
}

/* A word as a float in [0, 1), as pcg32_float does it: the top 24 bits times 2^-24,
 * exact in float. */
static float word_to_float(uint32_t word)
{
    return (float)(word >> 8) * 0x1.0p-24f;
}

float counter_rng_float(const CounterKey *key, uint64_t index)
{
    uint32_t words[4];
    counter_rng_block(key, (uint32_t)(index >> 2), words);
    return word_to_float(words[index & 3]);
}

void counter_rng_keep(uint8_t *keep, const CounterKey *key, uint64_t first, size_t n, float p)
{
    uint32_t words[4];
    size_t i = 0;
    while (i < n) {
        const uint64_t index = first + i;
        counter_rng_block(key, (uint32_t)(index >> 2), words);
        for (unsigned w = (unsigned)(index & 3); w < 4 && i < n; w++, i++) keep[i] = word_to_float(words[w]) >= p;
    }
}

RematStatus counter_rng_check(uint64_t n, const char *what)
{
    if (n <= COUNTER_RNG_MAX_ELEMENTS) return REMAT_OK;
    return remat_fail(REMAT_EINVAL, "%s: %llu elements are more than one counter-based key numbers (2^34)",
                      what, (unsigned long long)n);
}
