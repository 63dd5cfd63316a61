/*
 * kernels_rows.c — kernels that work row by row: softmax (causal or not) and LayerNorm
 * (see kernels.h).
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
 * dot_lanes, layernorm_row_means) reorder them on purpose, in a fixed way written in the
 * code: LANES running sums over interleaved elements, combined in lane order, then the
 * leftover tail. gcc turns the lanes into SIMD registers, and the order is the same on
 * every machine, vector width and thread count. (A max needs no such care: see the
 * softmax.)
 *
 * Aliasing: no output may overlap an input.
 */
#include "tensor/kernels.h"

#include <math.h>

#include "tensor/expf_inline.h"
#include "tensor/flops.h"

/* When to use threads, by total elements (rows·cols), measured as in
 * kernels_elementwise.c (time on 1 thread / time on 2, 2-core Zen):
 *   elements                  2^10  2^11  2^12  2^13  2^14  2^15  2^16  2^17
 *   softmax_fwd (cols 64)     1.25  1.52  1.68  1.82  1.85  1.92  1.87  1.94
 *   softmax_bwd (cols 64)       -   0.62  0.78  0.97  1.12  1.43  1.64  1.84
 *   layernorm_bwd (cols 256)    -   0.76  0.89  1.09  1.34  1.60  1.75  1.86
 * Kernels that call expf pay for threads from ~2^10 elements (they start at 2^12, like
 * GELU, to keep a margin); several passes per row (softmax backward, LayerNorm) from
 * ~2^13. */
#define PARALLEL_MIN_PASSES ((size_t)1 << 13)

/* Running sums per row reduction; 16 floats is one AVX-512 register or four SSE ones. */
#define LANES 16

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

/* ---- softmax ---------------------------------------------------------------------- */

/* Each row: out = exp(x − max x) / Σ exp(x − max x). Subtracting the max changes nothing
 * mathematically and keeps e^x from overflowing. Causal: row r is row t = r mod T of its
 * (T,T) block, T = cols, and keeps columns 0..t (query t attends to keys up to itself).
 * A max has no rounding, so unlike a sum its order cannot change the result: `omp simd
 * reduction(max)` lets gcc vectorise it in any order. (Only a NaN, or +0 against −0,
 * could tell two orders apart, and the order is fixed for a given build anyway.)
 * 5·kept + 1 FLOPs per row: kept compares (max), subtracts, exps and adds (sum), one
 * division and kept multiplies (normalise). Summed over a causal block, kept is
 * T·(T+1)/2. */
void k_softmax_forward(float *out, const float *x, int rows, int cols, bool causal)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_EXP)
    for (int r = 0; r < rows; r++) {
        const int kept = causal ? r % cols + 1 : cols;
        const float *x_r = x + (size_t)r * cols;
        float *out_r = out + (size_t)r * cols;
        float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
        for (int j = 0; j < kept; j++) maxval = x_r[j] > maxval ? x_r[j] : maxval;
        for (int j = 0; j < kept; j++) out_r[j] = expf_inline(x_r[j] - maxval); /* expf's bits */
        const float inv_sum = 1.0f / sum_lanes(out_r, kept);
        for (int j = 0; j < kept; j++) out_r[j] *= inv_sum;
        for (int j = kept; j < cols; j++) out_r[j] = 0.0f; /* masked: exactly 0 */
    }
    const uint64_t kept = causal ? (uint64_t)rows * (cols + 1) / 2 : (uint64_t)rows * cols;
    flops_add(5 * kept + (uint64_t)rows);
}

/* Forward was, per row, out_i = exp(x_i) / Σ_k exp(x_k) over the kept columns;
 * so d out_j / d x_i = out_j·([i = j] − out_i), and
 *   dx_i += Σ_j dout_j · out_j·([i = j] − out_i) = out_i · (dout_i − Σ_j dout_j·out_j).
 * The masked columns of a causal row do not depend on x: their dx gets nothing (it is
 * left exactly as it was). 5·kept FLOPs per row: 2·kept for the dot product, then a
 * subtract, a multiply and an add per element. */
void k_softmax_backward(float *dx, const float *out, const float *dout, int rows, int cols,
                        bool causal)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= PARALLEL_MIN_PASSES)
    for (int r = 0; r < rows; r++) {
        const int kept = causal ? r % cols + 1 : cols;
        const size_t off = (size_t)r * cols;
        const float dot = dot_lanes(dout + off, out + off, kept);
        for (int i = 0; i < kept; i++) dx[off + i] += out[off + i] * (dout[off + i] - dot);
    }
    const uint64_t kept = causal ? (uint64_t)rows * (cols + 1) / 2 : (uint64_t)rows * cols;
    flops_add(5 * kept);
}

/* ---- LayerNorm -------------------------------------------------------------------- */

/* x, out are (rows,cols); weight, bias are (cols); mean, rstd are (rows). The variance is
 * the biased one (divide by cols), as PyTorch's LayerNorm. out holds the centred x for a moment between the two passes.
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
 * (column blocks across threads, as k_bias_backward) does dweight and dbias, summing rows
 * in order 0..rows−1 so that the result does not depend on the thread count.
 * FLOPs as executed, norm being recomputed in each loop instead of stored:
 *   pass 1: per row 6·cols + 2 (the means) plus 8·cols (dx: 2 for norm, 1 for dnorm,
 *           2 subtracts, 2 multiplies, 1 add);
 *   pass 2: 5 per element (2 for norm, a multiply and two adds).
 *   Total rows·(19·cols + 2). */
void k_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                          const float *x, const float *weight, const float *mean,
                          const float *rstd, int rows, int cols)
{
    const int blocks = (cols + COL_BLOCK - 1) / COL_BLOCK;

    /* One parallel region for both loops: they write different arrays and only read the
     * inputs, so no thread waits between them (nowait), and the threads are started once. */
#pragma omp parallel if ((size_t)rows * cols >= PARALLEL_MIN_PASSES)
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
