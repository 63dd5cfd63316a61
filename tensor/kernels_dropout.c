/*
 * kernels_dropout.c — inverted dropout: a keep mask drawn from PCG32, and its backward;
 * and the same dropout with counter-based keep decisions, which stores no mask
 * (see kernels.h).
 *
 * What it is: element i is kept when the i-th draw of the generator, as a float in
 * [0, 1), is at least p; kept elements are scaled by 1/(1 − p) so that the expected value
 * of out equals x, and the backward needs nothing but the mask. The mask is uint8, one
 * byte per element: a quarter of what saving the float output would cost.
 *
 * Exactly one draw per element. The forward draws n numbers, in element order, and leaves
 * the caller's generator advanced by exactly n, whatever p is. That fixed count is what
 * lets a checkpoint replay skip a dropout it does not need to redo (pcg32_advance by n)
 * and still draw the same masks for everything after it.
 *
 * Threads. The draws of one generator form a sequence, but PCG32 can jump ahead in
 * O(log n) (pcg32_advance). So the elements are cut into fixed blocks of DROPOUT_BLOCK;
 * block b starts from a copy of the generator advanced by b·DROPOUT_BLOCK draws, which is
 * exactly the state a serial loop would be in when it reached element b·DROPOUT_BLOCK.
 * Each thread takes whole blocks (static schedule), so the mask is bit-identical to the
 * serial loop's on any thread count. The jump costs ~64 multiply-adds per block of 4096
 * elements (four jumps with the lanes' chains): nothing.
 *
 * With PCG32 the mask depends on where the generator was when the op ran; saving and
 * restoring it (a struct copy) is how a replay gets the same mask back, and the backward
 * reads the mask the forward stored. With the counter-based generator (counter_rng.h)
 * element i's decision is a pure function of the dropout's key and i: the forward
 * stores nothing and the backward makes the decisions again, block by block, any block
 * on any thread.
 *
 * Applying the mask is a multiply, x·(mask·scale), not a select: gcc 12 vectorises the
 * multiply but not a select on a uint8 condition. mask·scale is exactly scale or 0, so a
 * kept element is x·scale, bit for bit, and a dropped one x·0 = ±0 (NaN if x is infinite
 * or NaN, which PyTorch's dropout, also a multiply, propagates too). FLOPs count the
 * math, not this way of writing a select: 2 per element, itemised at each count.
 */
#include "tensor/kernels.h"

#include "tensor/flops.h"

/* Elements per block with its own advanced copy of the generator (see above), and the
 * independent chains a whole block is drawn as; LANES divides BLOCK. */
#define DROPOUT_BLOCK 4096
#define DROPOUT_LANES 4

/* When to use threads. A draw is a dependent chain of a 64-bit multiply-add (~1.5 ns per
 * element on one thread), more work per element than a streaming add. Measured as in
 * kernels_elementwise.c (time on 1 thread / time on 2, 2-core Zen, p = 0.1):
 *   elements       2^13  2^14  2^15  2^16  2^17
 *   dropout_fwd    1.13  1.26  1.28  1.36  1.80
 * so threads pay from two blocks on. The backward is a plain streaming pass, as k_axpy. */
#define DROPOUT_PARALLEL_MIN ((size_t)2 * DROPOUT_BLOCK)

/* Block b's mask[i] = draw i of `start` >= p for i in [lo, hi), as a serial loop from
 * `start` would draw them. One generator is a dependent chain: each draw waits for the
 * previous state's 64-bit multiply-add. A whole block is drawn as DROPOUT_LANES chains
 * instead, lane j starting at element lo + j·(block/lanes) (pcg32_advance), interleaved
 * in one loop so the core overlaps their multiplies; each element still gets the very
 * draw the serial loop gives it. A partial block at the end is drawn serially. */
void k_dropout_forward(float *out, uint8_t *mask, const float *x, float p, Pcg32 *rng, size_t n)
{
    enum { LANE = DROPOUT_BLOCK / DROPOUT_LANES };
    const float scale = 1.0f / (1.0f - p);
    const size_t blocks = (n + DROPOUT_BLOCK - 1) / DROPOUT_BLOCK;
    const Pcg32 start = *rng;
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PARALLEL_MIN)
    for (size_t b = 0; b < blocks; b++) {
        const size_t lo = b * DROPOUT_BLOCK, hi = n - lo < DROPOUT_BLOCK ? n : lo + DROPOUT_BLOCK;
        Pcg32 at_lo = start;
        pcg32_advance(&at_lo, lo); /* the state a serial loop has at element lo */
        if (hi - lo < DROPOUT_BLOCK) {
            for (size_t i = lo; i < hi; i++) mask[i] = pcg32_float(&at_lo) >= p;
        } else {
            Pcg32 lane[DROPOUT_LANES];
            for (int j = 0; j < DROPOUT_LANES; j++) {
                lane[j] = at_lo;
                pcg32_advance(&lane[j], (uint64_t)j * LANE);
            }
            for (size_t i = 0; i < LANE; i++)
                for (int j = 0; j < DROPOUT_LANES; j++) mask[lo + (size_t)j * LANE + i] = pcg32_float(&lane[j]) >= p;
        }
        for (size_t i = lo; i < hi; i++) out[i] = x[i] * ((float)mask[i] * scale);
    }
    pcg32_advance(rng, n); /* the caller's generator moves on by exactly n draws */
    flops_add(2 * (uint64_t)n); /* per element a compare (draw >= p) and a multiply */
}

void k_dropout_backward(float *dx, const float *dout, const uint8_t *mask, float p, size_t n)
{
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_STREAM)
    for (size_t i = 0; i < n; i++) dx[i] += dout[i] * ((float)mask[i] * scale);
    flops_add(2 * (uint64_t)n); /* a multiply and an add per element */
}

/* ---- counter-based ------------------------------------------------------------------ */

/* The ways counter_apply writes dst: the forward's output, or a gradient it adds to. */
typedef enum CounterWrite { COUNTER_FORWARD, COUNTER_ACCUMULATE } CounterWrite;

/* dst = src · keep · scale (COUNTER_FORWARD) or dst += that (COUNTER_ACCUMULATE), with
 * the keep decisions of `key`. Each block of DROPOUT_BLOCK elements (a multiple of 4: whole Philox blocks)
 * makes its decisions into a buffer on its thread's stack, then applies them. Philox
 * costs ten rounds of two 32-bit multiplies per four elements: as with a PCG32 draw,
 * threads pay from two blocks on. */
static void counter_apply(float *dst, const float *src, float p, const CounterKey *key, size_t n, CounterWrite how)
{
    const float scale = 1.0f / (1.0f - p);
    const size_t blocks = (n + DROPOUT_BLOCK - 1) / DROPOUT_BLOCK;
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PARALLEL_MIN)
    for (size_t b = 0; b < blocks; b++) {
        const size_t lo = b * DROPOUT_BLOCK, hi = n - lo < DROPOUT_BLOCK ? n : lo + DROPOUT_BLOCK;
        uint8_t keep[DROPOUT_BLOCK];
        counter_rng_keep(keep, key, lo, hi - lo, p);
        if (how == COUNTER_ACCUMULATE)
            for (size_t i = lo; i < hi; i++) dst[i] += src[i] * ((float)keep[i - lo] * scale);
        else
            for (size_t i = lo; i < hi; i++) dst[i] = src[i] * ((float)keep[i - lo] * scale);
    }
}

void k_dropout_counter_forward(float *out, const float *x, float p, const CounterKey *key, size_t n)
{
    counter_apply(out, x, p, key, n, COUNTER_FORWARD);
    flops_add(2 * (uint64_t)n); /* per element a compare (draw >= p) and a multiply */
}

void k_dropout_counter_backward(float *dx, const float *dout, float p, const CounterKey *key, size_t n)
{
    counter_apply(dx, dout, p, key, n, COUNTER_ACCUMULATE);
    flops_add_phase(PHASE_RECOMPUTE, (uint64_t)n); /* the mask's compares, made again */
    flops_add(2 * (uint64_t)n);                    /* a multiply and an add per element */
}
