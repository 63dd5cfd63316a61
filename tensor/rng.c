/*
 * rng.c — PCG32 (PCG-XSH-RR 64/32), written from O'Neill's 2014 paper; see rng.h.
 *
 * A PCG generator is two parts. A 64-bit linear congruential generator (LCG) moves the
 * state: state' = state * MULT + inc (mod 2^64). An LCG's low bits are poor (bit k has
 * period 2^(k+1)), so the output is not the state itself but a permutation of it:
 * "XSH-RR" xorshifts the high bits down, keeps 32 of them, and rotates those 32 bits by
 * an amount read from the top 5 bits of the state. The output is computed from the state
 * *before* the step, as the reference implementation does, so the multiply for the next
 * draw and the permutation for this one are independent. Those two, and the draws made of
 * them alone, are in rng.h (static inline: rng.h says why); the rest is here.
 *
 * This file is deliberately not a general random library: there are no 64-bit outputs,
 * no other PCG variants, no seeding from entropy and no cached second normal. The
 * generator stays a plain {state, inc} so that a struct copy saves it completely.
 */
#include "tensor/rng.h"

#include <math.h>

/* The increment must be odd for the LCG to have full period 2^64, so the stream number
 * is shifted up and its low bit set; this drops the stream's top bit, leaving 2^63
 * streams. Seeding steps once from 0, adds the seed, and steps again:
 *     state = (seed + inc) * MULT + inc,
 * which is exactly what pcg-cpp's pcg32(seed, stream) and pcg-c's pcg32_srandom_r do. */
void pcg32_seed(Pcg32 *rng, uint64_t seed, uint64_t stream)
{
    rng->state = 0;
    rng->inc = (stream << 1) | 1u;
    (void)pcg32_next(rng);
    rng->state += seed;
    (void)pcg32_next(rng);
}

/* Unbiased bounded draws by rejection. r % bound alone is biased whenever bound does not
 * divide 2^32: the first (2^32 mod bound) residues get one extra preimage. So reject the
 * r below threshold = 2^32 mod bound; the 2^32 - threshold values left are a whole
 * multiple of bound and r % bound is uniform on them. In 32-bit unsigned arithmetic,
 * 2^32 mod bound is (0 - bound) % bound, since 0 - bound wraps to 2^32 - bound.
 * At most half the values are rejected (worst case bound = 2^31 + 1), so the expected
 * number of draws is below 2; for small bounds it is 1 plus a tiny fraction.
 * This is the same loop as pcg-cpp's operator()(bound), so the sequences agree. */
uint32_t pcg32_bounded(Pcg32 *rng, uint32_t bound)
{
    if (bound == 0) return 0;
    uint32_t threshold = (0u - bound) % bound;
    for (;;) {
        uint32_t r = pcg32_next(rng);
        if (r >= threshold) return r % bound;
    }
}

/* Box–Muller: for independent uniforms u1 in (0, 1] and u2 in [0, 1),
 *     z = sqrt(-2 ln u1) * cos(2 pi u2)
 * is standard normal: (sqrt(-2 ln u1), 2 pi u2) are the polar coordinates of a 2-D
 * standard normal point, and z is its x coordinate. The twin value with sin is
 * discarded so the generator holds no cached sample and every call draws exactly two.
 * u1 = (draw + 1) * 2^-32 is never 0, so ln u1 is finite. Because u1 >= 2^-32, the radius
 * sqrt(-2 ln u1), and so |z|, never exceeds sqrt(64 ln 2) ~ 6.66: the radius tail beyond
 * it, of probability 2^-32, is never produced.
 * The arithmetic is in double and rounded once to float at the end. */
float pcg32_normal(Pcg32 *rng)
{
    const double two_pi = 6.283185307179586476925286766559;
    uint32_t a = pcg32_next(rng); /* two statements: the draw order is fixed */
    uint32_t b = pcg32_next(rng);
    double u1 = ((double)a + 1.0) * 0x1.0p-32;
    double u2 = (double)b * 0x1.0p-32;
    return (float)(sqrt(-2.0 * log(u1)) * cos(two_pi * u2));
}

/* Jump-ahead for an LCG (F. Brown, "Random Number Generation with Arbitrary Strides",
 * 1994). One step is the affine map f(s) = M s + C. Applying it twice gives
 *     f(f(s)) = M (M s + C) + C = M^2 s + (M + 1) C,
 * so the map for 2^(k+1) steps follows from the map (M_k, C_k) for 2^k steps by
 *     M_(k+1) = M_k^2,    C_(k+1) = (M_k + 1) C_k.
 * Writing delta in binary, the map for delta steps is the composition of the maps for
 * its set bits; powers of one map commute, so the order does not matter. Composing the
 * accumulated map (A, P) with (M_k, C_k) gives s -> M_k (A s + P) + C_k, i.e.
 *     A' = M_k A,    P' = M_k P + C_k.
 * That is one loop iteration per bit of delta: at most 64, all mod 2^64. */
void pcg32_advance(Pcg32 *rng, uint64_t delta)
{
    uint64_t step_mult = PCG32_MULT; /* M_k: multiplier of 2^k steps */
    uint64_t step_plus = rng->inc;   /* C_k: increment of 2^k steps */
    uint64_t acc_mult = 1;           /* A: multiplier of the steps taken so far */
    uint64_t acc_plus = 0;           /* P: increment of the steps taken so far */
    while (delta > 0) {
        if (delta & 1u) {
            acc_mult = step_mult * acc_mult;
            acc_plus = step_mult * acc_plus + step_plus;
        }
        step_plus = (step_mult + 1) * step_plus;
        step_mult = step_mult * step_mult;
        delta >>= 1;
    }
    rng->state = acc_mult * rng->state + acc_plus;
}
