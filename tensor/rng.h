/*
 * rng.h — PCG32, the generator behind every random draw in remat.
 *
 * PCG-XSH-RR with 64-bit state and 32-bit output (M. E. O'Neill, "PCG: A Family of
 * Simple Fast Space-Efficient Statistically Good Algorithms for Random Number
 * Generation", 2014), written from the paper's description. Its sequences match the
 * reference pcg32 of the PCG library bit for bit (tests/test_rng_pcgcpp.cpp proves it).
 *
 * The generator is a plain struct that callers own and pass in. Saving its state is a
 * struct copy and restoring it is another: this is what checkpoint regions do to replay
 * dropout masks (quiz question 7). pcg32_advance jumps ahead in O(log delta) steps.
 *
 * Every function draws a fixed number of 32-bit outputs, except pcg32_bounded (which
 * rejects a few values to stay unbiased): pcg32_next and pcg32_float draw one,
 * pcg32_normal draws two. Fixed draw counts let a caller skip over draws with advance.
 */
#ifndef REMAT_RNG_H
#define REMAT_RNG_H

#include <stdint.h>

typedef struct Pcg32 {
    uint64_t state; /* the LCG state, advanced once per draw */
    uint64_t inc;   /* the stream's odd increment, (stream << 1) | 1 */
} Pcg32;

/* Seeds `rng` with `seed` on stream `stream` (2^63 distinct streams), as the reference
 * pcg32(seed, stream) does. */
void pcg32_seed(Pcg32 *rng, uint64_t seed, uint64_t stream);

/* pcg32_next and pcg32_float are defined here, static inline, because dropout draws one
 * per element: as calls into rng.c they kept the mask loop a call per element; inlined,
 * the state stays in registers. rng.c explains the algorithm they are part of. */

/* The 64-bit LCG multiplier from the paper, also pcg-cpp's default_multiplier<uint64_t>. */
#define PCG32_MULT 6364136223846793005ULL

/* The next 32-bit output: step the LCG, state' = state * MULT + inc (wrapping mod 2^64),
 * and output the XSH-RR permutation of the old state:
 *   xorshift: old ^ (old >> 18) folds high bits onto the middle ones;
 *   >> 27:    keeps bits 27..58 of that, the 32 best-mixed bits;
 *   rotate:   right by old >> 59, the top 5 bits (the state's best bits), so every output
 *             bit depends on the high part of the state. The left shift uses (-rot) & 31
 *             rather than 32 - rot so that rot == 0 shifts by 0, not by 32 (which C
 *             leaves undefined). */
static inline uint32_t pcg32_next(Pcg32 *rng)
{
    const uint64_t old = rng->state;
    rng->state = old * PCG32_MULT + rng->inc;
    const uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    const uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((0u - rot) & 31u));
}

/* A uniform float in [0, 1) with 24 random bits (a multiple of 2^-24, at most
 * 1 - 2^-24); one draw. A float has a 24-bit significand, so the top 24 bits of a draw,
 * times 2^-24, give every multiple of 2^-24 in [0, 1) exactly and with equal probability;
 * using all 32 bits instead would round draws near 2^32 up to 1.0f. */
static inline float pcg32_float(Pcg32 *rng)
{
    return (float)(pcg32_next(rng) >> 8) * 0x1.0p-24f;
}

/* A uniform integer in [0, bound) without modulo bias, the same draws as the reference
 * pcg32's operator()(bound). Rejection makes the draw count vary: fewer than two on
 * average, and for small bounds almost always exactly one. bound must be > 0; bound 0
 * returns 0 and draws nothing. */
uint32_t pcg32_bounded(Pcg32 *rng, uint32_t bound);

/* A standard normal sample (Box–Muller); exactly two draws, no cached second sample.
 * Always finite: |result| <= sqrt(64 ln 2) ~ 6.66. */
float pcg32_normal(Pcg32 *rng);

/* Moves `rng` forward by `delta` draws in O(log delta), as if pcg32_next had been called
 * `delta` times. */
void pcg32_advance(Pcg32 *rng, uint64_t delta);

#endif /* REMAT_RNG_H */
