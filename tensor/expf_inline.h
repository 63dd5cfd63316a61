/*
 * expf_inline.h — e^x for float, inline, giving exactly the bits of glibc's expf on a
 * machine with FMA (glibc 2.36, Debian 12: its __expf_fma variant).
 *
 * What it is: the algorithm glibc's expf has used since 2.28 (from Arm's
 * optimized-routines), written out with the same constants and the same fused
 * multiply-adds, so it rounds exactly as the library does: checked for all 2^32 float
 * inputs on this project's machine (bit for bit, NaNs included), and on a sample in
 * tests/test_kernels.c. The point is speed with unchanged values: a call to expf per
 * element keeps a softmax loop scalar, while this inline code lets gcc vectorise it (the
 * loop's file needs -fno-trapping-math for the selects at the end: tensor/CMakeLists.txt).
 *
 *   x·32/ln2 = k + r, k an integer (rounded by adding 1.5·2^52), |r| ≤ 1/2;
 *   e^x = 2^(k/32) · 2^(r/32); 2^(k/32) = 2^(k div 32) · T[k mod 32], the table holding
 *   2^(i/32) with i·2^47 subtracted from its bits so that adding k·2^47 puts k div 32 in
 *   the exponent; 2^(r/32) ≈ 1 + C2·r + (C1 + C0·r)·r², evaluated in double, rounded to
 *   float once at the end.
 *   Outside the range that formula covers, glibc's answers: +inf above 88.72283 (the
 *   largest x with a finite e^x), the smallest subnormal 2^-149 for x in [−103.97208,
 *   −103.27892), 0 below that and for −inf, and NaN for NaN.
 *
 * What it is not: the C library's function. It does not set errno or raise exceptions,
 * and on a machine without FMA, where glibc picks a different variant, it may differ
 * from that machine's expf in the last bit (it still gives the same bits everywhere: fma
 * is exactly rounded by definition).
 */
#ifndef REMAT_EXPF_INLINE_H
#define REMAT_EXPF_INLINE_H

#include <math.h>
#include <stdint.h>

/* 2^(i/32) for i = 0..31 as double bits, minus i·2^47 (see above). */
static const uint64_t EXPF_TABLE[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};

/* A double and its bits. */
typedef union ExpfBits {
    uint64_t bits;
    double value;
} ExpfBits;

/* e^x, the same float as glibc's expf (see above). */
static inline float expf_inline(float x)
{
    const double INV_LN2_32 = ((ExpfBits){.bits = 0x40471547652b82fe}).value; /* 32/ln 2 */
    const double ROUND = ((ExpfBits){.bits = 0x4338000000000000}).value;      /* 1.5·2^52 */
    const double C0 = ((ExpfBits){.bits = 0x3ebc6af84b912394}).value;
    const double C1 = ((ExpfBits){.bits = 0x3f2ebfce50fac4f3}).value;
    const double C2 = ((ExpfBits){.bits = 0x3f962e42ff0c52d6}).value;
    const double xd = (double)x;
    const ExpfBits z = {.value = fma(INV_LN2_32, xd, ROUND)}; /* k in the low bits */
    const double r = fma(INV_LN2_32, xd, -(z.value - ROUND));
    const ExpfBits scale = {.bits = EXPF_TABLE[z.bits & 31] + (z.bits << 47)}; /* 2^(k/32) */
    const double y = fma(fma(C0, r, C1), r * r, fma(r, C2, 1.0));
    float out = (float)(y * scale.value);
    out = x < -103.278923f ? (x < -103.972076f ? 0.0f : 0x1p-149f) : out;
    out = x > 88.7228317f ? INFINITY : out;
    return x != x ? x + x : out;
}

#endif /* REMAT_EXPF_INLINE_H */
