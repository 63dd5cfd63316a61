/*
 * kernels_loss.c — the arithmetic of the losses: mean squared error for the MLP chain, and
 * softmax and cross-entropy fused for the char-level GPT (see kernels.h).
 *
 * What it is: each forward reduces a whole array to one number, so it is where summation
 * order decides the last bits. Both sum fixed blocks in double, each block in order, then
 * add the block sums in block order: the same result on any thread count.
 *
 * Cross-entropy: for each row of logits x (one position's scores over the V tokens) the
 * loss is −log softmax(x)[target] = log Σ_j exp(x_j − max) + max − x_target. Computing it
 * this way (log-sum-exp with the max subtracted) needs no softmax array and cannot
 * overflow. The backward needs softmax(x) itself; it recomputes it from the saved logits,
 * two passes over each row, instead of keeping a (rows,V) array of probabilities alive
 * from the forward.
 * What it is not: a general softmax (kernels_rows.c has that), a loss with label
 * smoothing, class weights or an ignored index, or a general reduction library.
 *
 * Aliasing: dlogits must not overlap logits.
 */
#include "tensor/kernels.h"

#include <math.h>

#include "tensor/expf_inline.h"
#include "tensor/flops.h"

/* Block sums each forward keeps on the stack per parallel region. */
#define SUM_GROUP 256

/* ---- mean squared error ----------------------------------------------------------- */

#define MSE_BLOCK 4096 /* elements per block sum */

double k_mse_forward(const float *pred, const float *target, size_t n)
{
    const size_t blocks = (n + MSE_BLOCK - 1) / MSE_BLOCK;
    double total = 0.0;
    for (size_t g0 = 0; g0 < blocks; g0 += SUM_GROUP) {
        const size_t g1 = blocks - g0 < SUM_GROUP ? blocks : g0 + SUM_GROUP;
        double block_sum[SUM_GROUP];
#pragma omp parallel for schedule(static) if ((g1 - g0) * MSE_BLOCK >= PARALLEL_MIN_STREAM)
        for (size_t b = g0; b < g1; b++) {
            const size_t lo = b * MSE_BLOCK, hi = n - lo < MSE_BLOCK ? n : lo + MSE_BLOCK;
            double s = 0.0;
            for (size_t i = lo; i < hi; i++) {
                const double d = (double)pred[i] - (double)target[i];
                s += d * d;
            }
            block_sum[b - g0] = s;
        }
        for (size_t b = g0; b < g1; b++) total += block_sum[b - g0];
    }
    flops_add(3 * (uint64_t)n); /* a subtract, a square and an add per element */
    return total / (double)n;
}

void k_mse_backward(float *dpred, const float *pred, const float *target, float dloss, size_t n)
{
    const float scale = dloss * 2.0f / (float)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN_STREAM)
    for (size_t i = 0; i < n; i++) dpred[i] += scale * (pred[i] - target[i]);
    flops_add(3 * (uint64_t)n); /* a subtract, a multiply and an add per element */
}

/* ---- cross-entropy ---------------------------------------------------------------- */

#define XENT_BLOCK 16 /* rows per block sum */

/* Row r's loss: −log(exp(x_t − max) / Σ_j exp(x_j − max)) = log Σ_j exp(x_j − max) + max − x_t.
 * The max does not round, so any order gives the same result and gcc may vectorise it
 * (as the softmax in kernels_rows.c); each exp is in float, summed in double in column
 * order. 4·V + 3 FLOPs: V compares (max), V subtracts, V exps and V adds (the sum); a log,
 * an add and a subtract. */
double k_cross_entropy_forward(const float *logits, const int32_t *targets, int rows, int V)
{
    const int blocks = (rows + XENT_BLOCK - 1) / XENT_BLOCK;
    double total = 0.0;
    for (int g0 = 0; g0 < blocks; g0 += SUM_GROUP) {
        const int g1 = blocks - g0 < SUM_GROUP ? blocks : g0 + SUM_GROUP;
        double block_sum[SUM_GROUP];
#pragma omp parallel for schedule(static) if ((size_t)(g1 - g0) * XENT_BLOCK * V >= PARALLEL_MIN_EXP)
        for (int b = g0; b < g1; b++) {
            const int r0 = b * XENT_BLOCK, r1 = rows - r0 < XENT_BLOCK ? rows : r0 + XENT_BLOCK;
            double s = 0.0;
            for (int r = r0; r < r1; r++) {
                const float *x = logits + (size_t)r * V;
                float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
                for (int j = 0; j < V; j++) maxval = x[j] > maxval ? x[j] : maxval;
                double sum = 0.0;
                for (int j = 0; j < V; j++) sum += (double)expf_inline(x[j] - maxval); /* no call */
                /* The difference of two floats is exact in double: max − x_t adds no rounding. */
                s += log(sum) + ((double)maxval - (double)x[targets[r]]);
            }
            block_sum[b - g0] = s;
        }
        for (int b = g0; b < g1; b++) total += block_sum[b - g0];
    }
    /* per row the row's 4·V + 3 and one add into the total; one division for the mean */
    flops_add((uint64_t)rows * (4 * (uint64_t)V + 4) + 1);
    return total / (double)rows;
}

/* Forward was loss_r = log Σ_j exp(x_j) − x_t (max subtracted or not: the same value), so
 *   d loss_r / d x_j = exp(x_j) / Σ_k exp(x_k) − [j = t] = softmax(x)_j − onehot(t)_j,
 * and the mean over rows scales it by 1/rows:
 *   dx_j += scale·softmax(x)_j − scale·[j = t],   scale = dloss/rows.
 * softmax(x)_j = exp(x_j − max)/sum is recomputed: the first pass finds max and sum, the
 * second folds scale/sum into one factor. Per row 8·V + 2 FLOPs: 4·V for max and sum as in
 * the forward; per element a subtract, an exp, a multiply and an add; one division (the
 * factor) and one subtract (the target's −scale). */
void k_cross_entropy_backward(float *dlogits, const float *logits, const int32_t *targets,
                              float dloss, int rows, int V)
{
    const float scale = dloss / (float)rows;
#pragma omp parallel for schedule(static) if ((size_t)rows * V >= PARALLEL_MIN_EXP)
    for (int r = 0; r < rows; r++) {
        const float *x = logits + (size_t)r * V;
        float *dx = dlogits + (size_t)r * V;
        float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
        for (int j = 0; j < V; j++) maxval = x[j] > maxval ? x[j] : maxval;
        double sum = 0.0;
        for (int j = 0; j < V; j++) sum += (double)expf_inline(x[j] - maxval);
        const float factor = (float)((double)scale / sum);
        for (int j = 0; j < V; j++) dx[j] += factor * expf_inline(x[j] - maxval); /* vectorised */
        dx[targets[r]] -= scale;
    }
    flops_add((uint64_t)rows * (8 * (uint64_t)V + 2) + 1); /* and the division for scale */
}
