/*
 * kernels_loss.c — the arithmetic of the losses: mean squared error.
 *
 * What it is: the forward reduces a whole array to one number, so it is the one place
 * where summation order decides the last bits. It sums fixed blocks of MSE_BLOCK
 * elements in double, each block in index order, then adds the block sums in block
 * order: the same result on any thread count.
 * What it is not: a general reduction library.
 */
#include "tensor/kernels.h"

#include <stdint.h>

#include "tensor/flops.h"

#define MSE_BLOCK 4096
#define MSE_GROUP 256                        /* block sums kept on the stack per round */
#define MSE_PARALLEL_MIN ((size_t)1 << 16)   /* as the other single-pass streaming kernels */

/* Forward: returns (1/n) Σ (pred − target)². FLOPs: 3n (subtract, square, add). */
double k_mse_forward(const float *pred, const float *target, size_t n)
{
    const size_t blocks = (n + MSE_BLOCK - 1) / MSE_BLOCK;
    double total = 0.0;
    for (size_t g0 = 0; g0 < blocks; g0 += MSE_GROUP) {
        const size_t g1 = blocks - g0 < MSE_GROUP ? blocks : g0 + MSE_GROUP;
        double block_sum[MSE_GROUP];
#pragma omp parallel for schedule(static) if ((g1 - g0) * MSE_BLOCK >= MSE_PARALLEL_MIN)
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
    flops_add(3 * (uint64_t)n);
    return total / (double)n;
}

/* Backward. Forward was loss = (1/n) Σ (pred − target)²; so
 * dpred += dloss · (2/n) · (pred − target). FLOPs: 3n (subtract, multiply, add). */
void k_mse_backward(float *dpred, const float *pred, const float *target, float dloss, size_t n)
{
    const float scale = dloss * 2.0f / (float)n;
#pragma omp parallel for schedule(static) if (n >= MSE_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) dpred[i] += scale * (pred[i] - target[i]);
    flops_add(3 * (uint64_t)n);
}
