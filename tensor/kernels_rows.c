/*
 * kernels_rows.c — kernels that work row by row: softmax, causal softmax, LayerNorm, row
 * sums and maxima, and the whole-array sum k_sum (see kernels.h).
 *
 * What it is: for each row, a few passes over contiguous memory (find the max, exponentiate,
 * normalise; or mean, variance, scale). Rows are independent, so threads take whole rows
 * with a static schedule; a row is always computed by one thread with the same code, which
 * makes every per-row result independent of the thread count.
 * What it is not: a fused or online-softmax kernel. Each pass is a plain loop a student can
 * step through, and the backward kernels recompute what they need (LayerNorm's normalised
 * x) rather than keep scratch arrays, because kernels never allocate.
 *
 * Sums inside a row. A float loop `s += x[j]` cannot be vectorised without -ffast-math,
 * which would let the compiler reorder the additions. The helpers below (sum_lanes,
 * dot_lanes, sum_lanes_double, layernorm_row_means) reorder them on purpose, in a fixed
 * way written in the code: LANES running sums over interleaved elements, combined in lane
 * order, then the leftover tail. gcc turns the lanes into SIMD registers, and the order is
 * the same on every machine, vector width and thread count. (A max needs no such care:
 * see max_of.)
 *
 * The sums across rows (LayerNorm's dweight and dbias) are split by columns instead, as in
 * k_bias_backward: each thread owns whole blocks of columns and adds rows in order.
 *
 * Aliasing: no output may overlap an input.
 * Sizes: rows, cols describe a row-major (rows,cols) array; BH·T rows of length T for the
 * causal softmax (BH = batch·heads, T = sequence length); n is a flat element count.
 */
#include "tensor/kernels.h"

#include <math.h>
#include <stdint.h>

#include "tensor/expf_inline.h"
#include "tensor/flops.h"

/* When to use threads, by total elements (rows·cols), measured as in
 * kernels_elementwise.c (time on 1 thread / time on 2, 2-core Zen):
 *   elements                  2^10  2^11  2^12  2^13  2^14  2^15  2^16  2^17
 *   softmax_fwd (cols 64)     1.25  1.52  1.68  1.82  1.85  1.92  1.87  1.94
 *   softmax_bwd (cols 64)       -   0.62  0.78  0.97  1.12  1.43  1.64  1.84
 *   layernorm_bwd (cols 256)    -   0.76  0.89  1.09  1.34  1.60  1.75  1.86
 *   row_sum (cols 256)          -   0.50  0.58  0.65  0.76  0.79  1.04  1.32
 * Kernels that call expf pay for threads from ~2^10 elements (they start at 2^12, like
 * GELU, to keep a margin); several passes per row (softmax backward, LayerNorm) from
 * ~2^13; a single streaming pass (row sums, k_sum) only from ~2^16. */
#define PARALLEL_MIN_EXP ((size_t)1 << 12)
#define PARALLEL_MIN_PASSES ((size_t)1 << 13)
#define PARALLEL_MIN_STREAM ((size_t)1 << 16)

/* Running sums per row reduction; 16 floats is one AVX-512 register or four SSE ones. */
#define LANES 16

/* LayerNorm's dweight/dbias pass gives each thread whole blocks of this many columns. */
#define COL_BLOCK 32

/* k_sum adds SUM_BLOCK elements per partial sum and handles SUM_GROUP partials per
 * parallel region, so its scratch is a fixed SUM_GROUP doubles on the stack. */
#define SUM_BLOCK 4096
#define SUM_GROUP 256

/* ---- fixed-order row reductions --------------------------------------------------- */

/* Σ x[0..n) in float, in the fixed lane order described in the file comment. */
static float sum_lanes(const float *x, int n)
{
    float acc[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += x[j + l];
    float s = 0.0f;
    for (int l = 0; l < LANES; l++) s += acc[l];
    for (; j < n; j++) s += x[j];
    return s;
}

/* Σ a[j]·b[j] over j in [0, n), in the same fixed order as sum_lanes. */
static float dot_lanes(const float *a, const float *b, int n)
{
    float acc[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += a[j + l] * b[j + l];
    float s = 0.0f;
    for (int l = 0; l < LANES; l++) s += acc[l];
    for (; j < n; j++) s += a[j] * b[j];
    return s;
}

/* max x[0..n) for n ≥ 1. A max has no rounding, so unlike a sum its order cannot change
 * the result; `omp simd reduction(max)` tells gcc it may vectorise the loop in any order.
 * (Only a NaN, or +0 against −0, could tell two orders apart, and the order is fixed for
 * a given build anyway.) */
static float max_of(const float *x, int n)
{
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
    return m;
}

/* Σ x[0..n) in double, in the same fixed order. */
static double sum_lanes_double(const float *x, size_t n)
{
    double acc[LANES] = {0};
    size_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += (double)x[j + l];
    double s = 0.0;
    for (int l = 0; l < LANES; l++) s += acc[l];
    for (; j < n; j++) s += (double)x[j];
    return s;
}

/* ---- softmax ---------------------------------------------------------------------- */

/* One row: out = exp(x − max x) / Σ exp(x − max x). Subtracting the max changes nothing
 * mathematically and keeps e^x from overflowing. 5·n + 1 FLOPs: n compares (max), n
 * subtracts, n exps, n adds (sum), one division and n multiplies (normalise). */
static void softmax_row(float *out, const float *x, int n)
{
    float maxval = max_of(x, n);
    for (int j = 0; j < n; j++) out[j] = expf_inline(x[j] - maxval); /* expf's bits, vectorised */
    float inv_sum = 1.0f / sum_lanes(out, n);
    for (int j = 0; j < n; j++) out[j] *= inv_sum;
}

/* One row of the backward. Forward was: out_i = exp(x_i) / Σ_k exp(x_k);
 * so d out_j / d x_i = out_j·([i = j] − out_i), and
 *   dx_i += Σ_j dout_j · out_j·([i = j] − out_i) = out_i · (dout_i − Σ_j dout_j·out_j).
 * 5·n FLOPs: 2·n for the dot product, then a subtract, a multiply and an add per element. */
static void softmax_row_backward(float *dx, const float *out, const float *dout, int n)
{
    float dot = dot_lanes(dout, out, n);
    for (int i = 0; i < n; i++) dx[i] += out[i] * (dout[i] - dot);
}

void k_softmax_forward(float *out, const float *x, int rows, int cols)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_EXP)
    for (int r = 0; r < rows; r++)
        softmax_row(out + (size_t)r * cols, x + (size_t)r * cols, cols);
    flops_add((uint64_t)rows * (5 * (uint64_t)cols + 1));
}

void k_softmax_backward(float *dx, const float *out, const float *dout, int rows, int cols)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_PASSES)
    for (int r = 0; r < rows; r++) {
        size_t off = (size_t)r * cols;
        softmax_row_backward(dx + off, out + off, dout + off, cols);
    }
    flops_add(5 * (uint64_t)rows * cols);
}

/* ---- causal softmax --------------------------------------------------------------- */

/* Rows are numbered r = bh·T + t over the BH·T rows; row t of its (T,T) block keeps
 * columns 0..t (query t attends to keys up to itself), t + 1 columns in all. Summed over
 * a block that is T·(T+1)/2 kept entries. */
static uint64_t causal_kept(int BH, int T) { return (uint64_t)BH * T * (T + 1) / 2; }

void k_causal_softmax_forward(float *out, const float *x, int BH, int T)
{
    int rows = BH * T;
#pragma omp parallel for schedule(static) if ((size_t)rows * T >= PARALLEL_MIN_EXP)
    for (int r = 0; r < rows; r++) {
        int kept = r % T + 1;
        float *out_r = out + (size_t)r * T;
        softmax_row(out_r, x + (size_t)r * T, kept);
        for (int j = kept; j < T; j++) out_r[j] = 0.0f; /* masked: exactly 0 */
    }
    flops_add(5 * causal_kept(BH, T) + (uint64_t)rows); /* softmax_row on kept columns */
}

/* Forward was a softmax over columns 0..t of each row, with the masked columns set to the
 * constant 0. The softmax backward applies to the kept columns; the masked ones do not
 * depend on x, so their dx gets nothing (it is left exactly as it was). */
void k_causal_softmax_backward(float *dx, const float *out, const float *dout, int BH, int T)
{
    int rows = BH * T;
#pragma omp parallel for schedule(static) if ((size_t)rows * T >= PARALLEL_MIN_PASSES)
    for (int r = 0; r < rows; r++) {
        size_t off = (size_t)r * T;
        softmax_row_backward(dx + off, out + off, dout + off, r % T + 1);
    }
    flops_add(5 * causal_kept(BH, T));
}

/* ---- LayerNorm -------------------------------------------------------------------- */

/* x, out are (rows,cols); weight, bias are (cols); mean, rstd are (rows).
 * Per row: mean = Σx/cols; var = Σ(x − mean)²/cols; rstd = 1/sqrt(var + eps);
 * out = (x − mean)·rstd·weight + bias. The variance is the biased one (divide by cols),
 * as PyTorch's LayerNorm. out holds the centred x for a moment between the two passes.
 * FLOPs: rows·(7·cols + 5): per element a sum add, a subtract, a multiply and add for the
 * variance, and two multiplies and an add for out; per row two divisions, an add (eps),
 * a sqrt and a reciprocal. */
void k_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                         const float *weight, const float *bias, int rows, int cols, float eps)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_PASSES)
    for (int r = 0; r < rows; r++) {
        const float *x_r = x + (size_t)r * cols;
        float *out_r = out + (size_t)r * cols;
        float m = sum_lanes(x_r, cols) / (float)cols;
        for (int j = 0; j < cols; j++) out_r[j] = x_r[j] - m;
        float var = dot_lanes(out_r, out_r, cols) / (float)cols;
        float s = 1.0f / sqrtf(var + eps);
        for (int j = 0; j < cols; j++) out_r[j] = out_r[j] * s * weight[j] + bias[j];
        mean[r] = m;
        rstd[r] = s;
    }
    flops_add((uint64_t)rows * (7 * (uint64_t)cols + 5));
}

/* One row's two means for the backward (see k_layernorm_backward):
 * *dnorm_mean = mean_j(dnorm_j), *dnorm_norm_mean = mean_j(dnorm_j·norm_j), where
 * norm_j = (x_j − mean)·rstd and dnorm_j = dout_j·weight_j. In the fixed lane order.
 * 6·cols + 2 FLOPs. */
static void layernorm_row_means(float *dnorm_mean, float *dnorm_norm_mean, const float *dout_r,
                                const float *x_r, const float *weight, float mean, float rstd,
                                int cols)
{
    float acc_d[LANES] = {0}, acc_dn[LANES] = {0};
    int j = 0;
    for (; j + LANES <= cols; j += LANES) {
        for (int l = 0; l < LANES; l++) {
            float norm = (x_r[j + l] - mean) * rstd;
            float dnorm = dout_r[j + l] * weight[j + l];
            acc_d[l] += dnorm;
            acc_dn[l] += dnorm * norm;
        }
    }
    float sum_d = 0.0f, sum_dn = 0.0f;
    for (int l = 0; l < LANES; l++) {
        sum_d += acc_d[l];
        sum_dn += acc_dn[l];
    }
    for (; j < cols; j++) {
        float norm = (x_r[j] - mean) * rstd;
        float dnorm = dout_r[j] * weight[j];
        sum_d += dnorm;
        sum_dn += dnorm * norm;
    }
    *dnorm_mean = sum_d / (float)cols;
    *dnorm_norm_mean = sum_dn / (float)cols;
}

/* Forward was: norm = (x − mean)·rstd; out = norm·weight + bias (per row, per column j).
 * So, with dnorm = dout·weight:
 *   dbias[j]   += Σ_rows dout[j]                     (d out / d bias = 1)
 *   dweight[j] += Σ_rows dout[j]·norm[j]             (d out / d weight = norm)
 *   dx[j]      += rstd·(dnorm[j] − mean(dnorm) − norm[j]·mean(dnorm·norm))
 * The dx line is the chain rule through mean and rstd, which both depend on every x of
 * the row: d norm_i / d x_j = rstd·([i = j] − 1/cols − norm_i·norm_j/cols).
 *
 * Two parallel passes. Pass 1 (rows across threads) does dx, which is per row. Pass 2
 * (column blocks across threads) does dweight and dbias, summing rows in order 0..rows−1
 * so that the result does not depend on the thread count.
 * FLOPs as executed, norm being recomputed in each loop instead of stored:
 *   pass 1: per row 6·cols + 2 (the means) plus 8·cols (dx: 2 for norm, 1 for dnorm,
 *           2 subtracts, 2 multiplies, 1 add);
 *   pass 2: 5 per element (2 for norm, a multiply and two adds).
 *   Total rows·(19·cols + 2). */
void k_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                          const float *x, const float *weight, const float *mean,
                          const float *rstd, int rows, int cols)
{
    const int parallel = (size_t)rows * cols >= PARALLEL_MIN_PASSES;
    const int blocks = (cols + COL_BLOCK - 1) / COL_BLOCK;

    /* One parallel region for both loops: they write different arrays and only read the
     * inputs, so no thread waits between them (nowait), and the threads are started once. */
#pragma omp parallel if (parallel)
    {
#pragma omp for schedule(static) nowait
        for (int r = 0; r < rows; r++) {
            size_t off = (size_t)r * cols;
            const float *x_r = x + off, *dout_r = dout + off;
            float *dx_r = dx + off;
            float m = mean[r], s = rstd[r];
            float dnorm_mean, dnorm_norm_mean;
            layernorm_row_means(&dnorm_mean, &dnorm_norm_mean, dout_r, x_r, weight, m, s, cols);
            for (int j = 0; j < cols; j++) {
                float norm = (x_r[j] - m) * s;
                float dnorm = dout_r[j] * weight[j];
                dx_r[j] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
            }
        }

#pragma omp for schedule(static)
        for (int blk = 0; blk < blocks; blk++) {
            int c0 = blk * COL_BLOCK;
            int width = cols - c0 < COL_BLOCK ? cols - c0 : COL_BLOCK;
            float sum_w[COL_BLOCK] = {0}, sum_b[COL_BLOCK] = {0};
            for (int r = 0; r < rows; r++) {
                size_t off = (size_t)r * cols + c0;
                const float *x_r = x + off, *dout_r = dout + off;
                float m = mean[r], s = rstd[r];
                for (int c = 0; c < width; c++) {
                    sum_w[c] += dout_r[c] * ((x_r[c] - m) * s);
                    sum_b[c] += dout_r[c];
                }
            }
            for (int c = 0; c < width; c++) {
                dweight[c0 + c] += sum_w[c];
                dbias[c0 + c] += sum_b[c];
            }
        }
    }
    flops_add((uint64_t)rows * (19 * (uint64_t)cols + 2));
}

/* ---- row and whole-array reductions ----------------------------------------------- */

void k_row_sum(float *out, const float *x, int rows, int cols)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_STREAM)
    for (int r = 0; r < rows; r++) out[r] = sum_lanes(x + (size_t)r * cols, cols);
    flops_add((uint64_t)rows * cols); /* one add per element */
}

void k_row_max(float *out, const float *x, int rows, int cols)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_STREAM)
    for (int r = 0; r < rows; r++) out[r] = max_of(x + (size_t)r * cols, cols);
    flops_add((uint64_t)rows * cols); /* one compare per element */
}

/* x is cut into blocks of SUM_BLOCK elements; each block is summed in double (sum_lanes_
 * double), and the block sums are added in block order. Threads compute block sums only,
 * so the result is the same for every thread count. To need no heap scratch, the blocks
 * are taken SUM_GROUP at a time: one parallel loop fills a stack array with a group's
 * block sums, then the calling thread adds them to the total in order. */
double k_sum(const float *x, size_t n)
{
    size_t blocks = (n + SUM_BLOCK - 1) / SUM_BLOCK;
    double total = 0.0;
    for (size_t g0 = 0; g0 < blocks; g0 += SUM_GROUP) {
        size_t g1 = blocks - g0 < SUM_GROUP ? blocks : g0 + SUM_GROUP;
        double block_sum[SUM_GROUP];
#pragma omp parallel for schedule(static) if ((g1 - g0) * SUM_BLOCK >= PARALLEL_MIN_STREAM)
        for (size_t b = g0; b < g1; b++) {
            size_t lo = b * SUM_BLOCK;
            size_t len = n - lo < SUM_BLOCK ? n - lo : SUM_BLOCK;
            block_sum[b - g0] = sum_lanes_double(x + lo, len);
        }
        for (size_t b = g0; b < g1; b++) total += block_sum[b - g0];
    }
    flops_add(n); /* one add per element */
    return total;
}
