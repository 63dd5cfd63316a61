/*
 * kernels_elementwise.c — kernels that touch each element on its own: fill, add,
 * axpy, scale, bias add and its backward, ReLU and GELU (see kernels.h).
 *
 * What it is: one flat loop per kernel over contiguous memory, simple enough for gcc to
 * vectorise, split over threads with a static schedule once the array is big enough to
 * pay for them. GELU's tanh is computed here (tanh_for_gelu) rather than by libm's tanhf,
 * whose call keeps a loop scalar without -ffast-math.
 * What it is not: fused or clever. Each kernel reads its inputs and writes its output once;
 * a training step's cost is dominated by the matmuls anyway.
 *
 * Aliasing: an output may be the very same array as an input (k_add(x, x, y) adds in
 * place), since element i is read before it is written; partial overlaps are not allowed.
 * A backward's gradient output must not overlap any of its inputs.
 *
 * FLOPs follow flops.h: one multiply, add, compare or tanh per element is one FLOP.
 * Each kernel's count is in kernels.h, and how it is made up is beside the loop below.
 */
#include "tensor/kernels.h"

#include "tensor/flops.h"

/* When to use threads (PARALLEL_MIN_STREAM and PARALLEL_MIN_EXP, kernels.h), measured with
 * 2 threads on a 2-core Zen (time on 1 thread / time on 2; above 1 threads win):
 *   elements     2^12  2^13  2^14  2^15  2^16  2^17  2^18
 *   k_add        0.62  0.73  0.83  0.83  1.16  1.53  1.44   (0.25 ns per element)
 *   relu_bwd     0.67  0.79  1.01  1.24  1.55  1.72  1.86
 *   gelu_fwd     1.65  1.83  1.10  1.93  1.96  2.08  1.88
 *   gelu_bwd     1.67  1.84  1.89  1.95  1.97  1.93  1.96
 * Streaming kernels break even near 2^16 elements; GELU, which spends its time in tanhf,
 * wins from 2^12 on. */

/* ---- fill, add, axpy, scale ------------------------------------------------------- */

void k_fill(float *out, float value, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_STREAM)
    for (size_t i = 0; i < n; i++) out[i] = value;
    /* a store is not a FLOP */
}

void k_add(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_STREAM)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    flops_add(n); /* one add per element */
}

void k_axpy(float *y, const float *x, float alpha, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_STREAM)
    for (size_t i = 0; i < n; i++) y[i] += alpha * x[i];
    flops_add(2 * (uint64_t)n); /* a multiply and an add per element */
}

void k_scale(float *out, const float *x, float s, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_STREAM)
    for (size_t i = 0; i < n; i++) out[i] = s * x[i];
    flops_add(n); /* one multiply per element */
}

/* ---- bias ------------------------------------------------------------------------- */

/* The store is not a FLOP, but the bias adds are: a linear's product is added onto these
 * rows next (k_matmul with beta = 1, out = x·W + out), which performs one add per element
 * of out inside the sgemm. They are counted here, where the bias enters, so the FLOP
 * ledger says what it said when the bias was added in a pass of its own after the
 * product, and the matmul share keeps counting exactly 2·M·N·K. */
void k_bias_broadcast(float *out, const float *bias, int rows, int cols)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_STREAM)
    for (int r = 0; r < rows; r++) {
        float *out_r = out + (size_t)r * cols;
        for (int c = 0; c < cols; c++) out_r[c] = bias[c];
    }
    flops_add((uint64_t)rows * cols); /* the add per element of out that the product makes */
}

/* Forward was: out[r,c] = bias[c] + (x·W)[r,c] for every row r;
 * so d out[r,c] / d bias[c] = 1 and dbias[c] += Σ_r dout[r,c].
 *
 * The sum runs over rows, which is where threads would normally split the work. To keep
 * the result independent of the thread count, threads split the columns instead: each
 * thread owns whole blocks of COL_BLOCK columns and adds every row into them in row
 * order 0, 1, ..., rows−1, the same order a single thread uses. The block's running sums
 * live in a small stack array, so the inner loop is a contiguous vector add. Fewer than
 * COL_BLOCK·threads columns leave some threads idle; the kernel is cheap enough not to
 * matter. */
void k_bias_backward(float *dbias, const float *dout, int rows, int cols)
{
    int blocks = (cols + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_STREAM)
    for (int blk = 0; blk < blocks; blk++) {
        int c0 = blk * COL_BLOCK;
        int width = cols - c0 < COL_BLOCK ? cols - c0 : COL_BLOCK;
        float sum[COL_BLOCK] = {0};
        for (int r = 0; r < rows; r++) {
            const float *dout_r = dout + (size_t)r * cols + c0;
            for (int c = 0; c < width; c++) sum[c] += dout_r[c];
        }
        for (int c = 0; c < width; c++) dbias[c0 + c] += sum[c];
    }
    /* rows adds per column: rows−1 inside the sum and one into dbias */
    flops_add((uint64_t)rows * cols);
}

/* ---- ReLU ------------------------------------------------------------------------- */

void k_relu_forward(float *out, const float *x, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_STREAM)
    for (size_t i = 0; i < n; i++) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
    flops_add(n); /* one compare per element */
}

/* Forward was: out = max(x, 0);
 * so d out / dx = 1 where x > 0 and 0 elsewhere (0 at x = 0 itself, as PyTorch), and
 * dx += dout · [x > 0]. */
void k_relu_backward(float *dx, const float *x, const float *dout, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_STREAM)
    for (size_t i = 0; i < n; i++) {
        float g = dout[i]; /* loaded before the test, so the loop has no branch to vectorise */
        dx[i] += x[i] > 0.0f ? g : 0.0f;
    }
    flops_add(2 * (uint64_t)n); /* a compare and an add per element */
}

/* ---- GELU ------------------------------------------------------------------------- */

/* tanh(u) for GELU, as 1 − 2/(e^{2u} + 1), in plain arithmetic gcc can vectorise (given
 * -fno-trapping-math, which tensor/CMakeLists.txt sets for this file: without it the
 * clamp's compares keep the GELU loops scalar).
 *   e^v: v = k·ln2 + r with k = round(v/ln2) and |r| ≤ ln2/2; e^r by its Taylor series to
 *   r⁷ (truncation error r⁸/8! < 2e-8 for |r| ≤ 0.35); 2^k by writing k + 127 into the
 *   float's exponent bits. ln2 is split in two parts so k·ln2 is exact.
 *   |2u| is clamped to 40: tanh(±20) is ±1 in float, and e^40 stays finite.
 * The result is within ~1e-7 of tanh(u) in absolute terms (near 0 the relative error is
 * larger). That is what GELU needs: it only ever uses 1 + tanh(u) and 1 − tanh²(u).
 * The rounding k = round(v/ln2) adds and subtracts 1.5·2^23, which rounds to nearest
 * integer in float arithmetic without a libm call. */
static inline float tanh_for_gelu(float u)
{
    const float LOG2E = 1.44269504088896341f, LN2_HI = 0.693145751953125f, LN2_LO = 1.42860682030941723212e-6f;
    const float ROUND = 12582912.0f; /* 1.5·2^23 */
    float v = 2.0f * u;
    v = v > 40.0f ? 40.0f : v < -40.0f ? -40.0f : v;
    const float k = (v * LOG2E + ROUND) - ROUND;
    const float r = (v - k * LN2_HI) - k * LN2_LO;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union { uint32_t bits; float value; } scale = {.bits = (uint32_t)((int32_t)k + 127) << 23};
    const float e = p * scale.value;
    return 1.0f - 2.0f / (e + 1.0f);
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBIC 0.044715f
#define GELU_CUBIC3 (3.0f * GELU_CUBIC) /* x²'s coefficient in du/dx, folded at compile time */

void k_gelu_forward(float *out, const float *x, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_EXP)
    for (size_t i = 0; i < n; i++) {
        float xi = x[i];
        float u = GELU_SCALE * (xi + GELU_CUBIC * xi * xi * xi); /* 3 mul, add, mul: 5 */
        out[i] = 0.5f * xi * (1.0f + tanh_for_gelu(u));                 /* tanh, add, 2 mul: 4 */
    }
    flops_add(9 * (uint64_t)n);
}

/* Forward was: out = 0.5·x·(1 + tanh(u)), with u = s·(x + 0.044715·x³), s = sqrt(2/pi).
 * Product rule on 0.5·x times (1 + tanh(u)):
 *   d out/dx = 0.5·(1 + tanh(u)) + 0.5·x · sech²(u) · du/dx,
 *   sech²(u) = 1 − tanh²(u)     (llm.c calls coshf for 1/cosh²(u), the same value; reusing
 *                                tanh(u) saves a transcendental per element),
 *   du/dx    = s·(1 + 3·0.044715·x²).
 * so dx += dout · d out/dx. 20 FLOPs per element, counted on the lines below. */
void k_gelu_backward(float *dx, const float *x, const float *dout, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_EXP)
    for (size_t i = 0; i < n; i++) {
        float xi = x[i];
        float u = GELU_SCALE * (xi + GELU_CUBIC * xi * xi * xi);   /* 5 */
        float t = tanh_for_gelu(u);                                       /* 1 */
        float du_dx = GELU_SCALE * (1.0f + GELU_CUBIC3 * xi * xi);  /* 3 mul, add: 4 */
        float sech2 = 1.0f - t * t;                                 /* 2 */
        float grad = 0.5f * (1.0f + t) + 0.5f * xi * sech2 * du_dx; /* 4 mul, 2 add: 6 */
        dx[i] += dout[i] * grad;                                    /* 2 */
    }
    flops_add(20 * (uint64_t)n);
}
