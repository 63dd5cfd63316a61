/*
 * kernels_heads.c — attention's change of layout: the fused q,k,v projection cut into
 * heads, and the heads put side by side again (see kernels.h).
 *
 * What it is: multi-head attention computes, for each (batch, head), a (T,T) product of
 * that head's queries and keys. The projection produces, for each token, q, k and v
 * side by side, each of C = H·D channels: qkv is (B,T,3C). The batched matmuls want each
 * head's (T,D) block contiguous: (B,H,T,D). Splitting is a transposing copy of one of
 * the three parts; merging copies (B,H,T,D) back to (B,T,C). Each is the other's backward,
 * adding (+=) like every backward: one kernel, told the direction, serves all four.
 * Threads take whole tokens (b,t): a token's row of qkv (or of the merged output) is
 * read or written by one thread only, and every element is touched once, so the results
 * do not depend on the thread count.
 * What it is not: a strided "view" that avoids the copy. Copies keep every tensor
 * contiguous, which is what the rest of remat (and BLAS) expects; they cost a few
 * percent of a step.
 *
 * Aliasing: no output may overlap an input. C is a multiple of H (the caller checks).
 */
#include "tensor/kernels.h"

#include "tensor/flops.h"

/* Copies (or, with add, adds) every head row of D floats between the two layouts, towards
 * the heads (TO_HEADS) or towards the rows (TO_ROWS). Each thread takes whole tokens
 * r = (b, t) = (r / T, r % T); the (b,h,t) row of D floats starts at ((b·H + h)·T + t)·D
 * in a (B,H,T,D) array, and at r·stride + h·D in the (B,T,stride) one. */
void k_move_heads(HeadsWay way, float *dst, const float *src, int stride, int B, int T, int C, int H, bool add)
{
    const int D = C / H;
    const bool to_heads = way == TO_HEADS;
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PARALLEL_MIN_STREAM)
    for (int r = 0; r < B * T; r++) {
        for (int h = 0; h < H; h++) {
            const size_t head = (((size_t)(r / T) * H + h) * T + r % T) * D, row = (size_t)r * stride + (size_t)h * D;
            float *to = dst + (to_heads ? head : row);
            const float *from = src + (to_heads ? row : head);
            if (add)
                for (int d = 0; d < D; d++) to[d] += from[d];
            else
                for (int d = 0; d < D; d++) to[d] = from[d];
        }
    }
    if (add) flops_add((uint64_t)B * T * C); /* one add per element; a copy is not a FLOP */
}
