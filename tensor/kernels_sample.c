/*
 * kernels_sample.c — choosing a token from a row of scores: argmax, and a draw from a
 * categorical distribution (see kernels.h). Text generation's last step.
 *
 * What it is: two serial scans over one row of n values (n is a vocabulary, a few
 * hundred). A draw takes its uniform number u from the caller, so the kernel itself is
 * deterministic and the caller decides where the randomness comes from.
 * What it is not: top-k, nucleus or any other sampling policy; the caller shapes the
 * distribution first (temperature with k_scale, then k_softmax_forward).
 */
#include "tensor/kernels.h"

#include "tensor/flops.h"

int k_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i; /* strictly greater: the first maximum wins ties */
    flops_add(n > 0 ? (uint64_t)n - 1 : 0); /* one compare per element after the first */
    return best;
}

/* Inverse-CDF sampling: the cumulative sums c_i = p_0 + ... + p_i cut [0, 1) into
 * intervals of lengths p_i, and u falls in interval i with probability p_i. */
int k_sample_categorical(const float *probs, int n, float u)
{
    float cumulative = 0.0f;
    int last_nonzero = 0, i = 0;
    for (; i < n; i++) {
        cumulative += probs[i];
        if (probs[i] > 0.0f) last_nonzero = i;
        if (u < cumulative) break;
    }
    flops_add((uint64_t)(i < n ? i + 1 : n) * 2); /* an add and a compare per element scanned */
    return i < n ? i : last_nonzero;
}
